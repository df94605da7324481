import { eq } from 'drizzle-orm';
import type { HostCheckShown } from '../../core/host-checks/ports.ts';
import { hosts } from '../../db/schema.ts';
import type { TestHost } from '../support/backups.ts';
import { restoreDestination } from '../support/engine.ts';
import type { Harness } from '../support/harness.ts';
import { scaled } from '../support/time.ts';

/** A destination (not started: hosts are checked whatever their destination does) with one checked host. */
export async function checkedHost(h: Harness, api: string, destination: string, host: TestHost): Promise<number> {
  await restoreDestination(h, api, destination, [{ check: true, ...host }], { start: false });
  const [row] = await h.db
    .select({ id: hosts.hostid })
    .from(hosts)
    .where(eq(hosts.nickname, `${destination.toLowerCase()}-0`));
  return row!.id;
}

/** The destination's checked host as the console shows it. */
export async function shown(h: Harness, destination: string, hostId: number): Promise<HostCheckShown | undefined> {
  return (await h.ports.repos.hostChecks.ofDestination(destination)).find((c) => c.hostId === hostId);
}

/** Waits for a result of the host's check that `accept` takes, and answers it. */
export async function resultOf(
  h: Harness,
  destination: string,
  hostId: number,
  accept: (c: HostCheckShown) => boolean = () => true,
  timeoutMs = 20_000,
) {
  const until = Date.now() + scaled(timeoutMs);
  for (;;) {
    const c = await shown(h, destination, hostId);
    if (c?.latest && accept(c)) return { ...c, latest: c.latest };
    if (Date.now() > until) throw new Error(`no check result for host ${hostId}: ${JSON.stringify(c)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

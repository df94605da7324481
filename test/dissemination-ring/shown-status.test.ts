import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimTransfers } from '../../core/dissemination/claims.ts';
import { showStatuses } from '../../core/dissemination/destination-status.ts';
import { destinations } from '../../db/schema.ts';
import { restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/**
 * A destination's shown status is decided by whoever changes what it sends: a claim, in its own
 * transaction, and each attempt's end. An end that read the destination before a claim committed
 * must not store what it decided then over the claim's.
 */
let h: Harness;
let admin: string;
let root: string;
beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-shown-')));
  fs.writeFileSync(path.join(root, 'a.grib'), 'grib!');
  h = await createHarness({ sourceRoots: [root] });
  admin = await h.client('operator', ['.*']);
});
afterAll(async () => {
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const shown = async (name: string) =>
  (await h.db.select().from(destinations).where(eq(destinations.name, name)))[0]?.schedulerStatus;
const claim = (destination: string, mover: string) =>
  claimTransfers(h.ports, {
    destination,
    hostId: 'H',
    mover,
    destinationMax: -1,
    hostMax: -1,
    leaseMs: 60_000,
    wanted: 1,
  });

describe('the status a destination shows', () => {
  it('is sending once a claim commits, even over an end that decided before it', async () => {
    const name = 'SHOWN_RACE';
    await restoreDestination(h, admin, name, [{ method: 'test' }]);
    for (const target of ['a', 'b']) {
      const query = new URLSearchParams({ destination: name, source: path.join(root, 'a.grib'), target });
      expect((await h.call('GET', `/v1/datafile/put?${query}`, { auth: admin })).status).toBe(200);
    }
    const [first] = await claim(name, 'm1');
    expect(await shown(name)).toBe('EXEC');
    const now = h.ports.clock();
    const ended = await h.ports.repos.dissemination.finishDelivered({
      now,
      ends: [
        {
          id: first!.id,
          attempt: first!.attempt,
          mover: 'm1',
          sent: 5,
          md5: null,
          comment: 'sent',
          filter: null,
          success: { hostIndex: 0, awayFromPrimary: false },
        },
      ],
    });
    expect(ended).toHaveLength(1);
    // The end reads the destination: nothing sending, a file due.
    const views = await h.ports.repos.dissemination.schedulerViews([name], now);
    expect(views.get(name)?.sending).toBe(false);
    // Another mover's claim commits before the end writes what it decided.
    expect(await claim(name, 'm2')).toHaveLength(1);
    await showStatuses(h.ports.repos.dissemination, views, now);
    expect(await shown(name)).toBe('EXEC');
  });

  it('is written by an end when nothing changed the destination since it read it', async () => {
    const name = 'SHOWN_CALM';
    await restoreDestination(h, admin, name, [{ method: 'test' }]);
    const query = new URLSearchParams({ destination: name, source: path.join(root, 'a.grib'), target: 'a' });
    expect((await h.call('GET', `/v1/datafile/put?${query}`, { auth: admin })).status).toBe(200);
    const now = h.ports.clock();
    await showStatuses(h.ports.repos.dissemination, await h.ports.repos.dissemination.schedulerViews([name], now), now);
    expect(await shown(name)).toBe('SCHE');
  });
});

describe('a claim on a destination another claim holds', () => {
  it.skipIf(!process.env.TEST_DATABASE_URL)(
    'moves on at once, without waiting for the host that claim locked',
    async () => {
      const name = 'CLAIM_HELD';
      await restoreDestination(h, admin, name, [{ method: 'test' }]);
      const query = new URLSearchParams({ destination: name, source: path.join(root, 'a.grib'), target: 'a' });
      expect((await h.call('GET', `/v1/datafile/put?${query}`, { auth: admin })).status).toBe(200);
      const url = (h.handle as { url?: string }).url ?? process.env.TEST_DATABASE_URL!;
      const other = postgres(url, { max: 1, onnotice: () => undefined });
      try {
        await other.begin(async (tx) => {
          // What a claim holds while it decides: the destination's row, then its host's lock.
          expect(
            await h.ports.repos.transaction((repos) => repos.dissemination.lockForClaim(name, 'H')),
          ).not.toBeNull();
          await tx`select name from destinations where name = ${name} for update`;
          await tx`select pg_advisory_xact_lock(hashtextextended(${'host:H'}, 0))`;
          const started = performance.now();
          const answer = await Promise.race([
            claim(name, 'm3'),
            new Promise((resolve) => setTimeout(() => resolve('waited'), 5000)),
          ]);
          expect(answer).toEqual([]);
          expect(performance.now() - started).toBeLessThan(5000);
        });
      } finally {
        await other.end();
      }
    },
  );
});

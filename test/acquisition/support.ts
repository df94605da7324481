import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { expect } from 'vitest';
import { type Acquirer, startAcquirer } from '../../core/acquisition/acquirer.ts';
import type { RunShown } from '../../core/acquisition/ports.ts';
import { subscriptionReader } from '../../core/acquisition/wis2-source.ts';
import { startRetriever } from '../../core/retrieval/retriever.ts';
import { sourceHostOpener } from '../../core/retrieval/source-host.ts';
import { dataFiles, dataTransfers, hosts } from '../../db/schema.ts';
import { nodeWis2Intake } from '../../functions/node/wis2-intake.ts';
import { mqttSubscriber } from '../../functions/node/wis2-subscribe.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import { md5, retrievalScene } from '../retrieval/support.ts';
import type { TestHost } from '../support/backups.ts';
import { restoreDestination } from '../support/engine.ts';

/**
 * A harness whose movers acquire: an acquirer listing the Acquisition hosts (every 300 ms), a retriever
 * reading what they registered from those hosts into a directory store, and a mover sending it on.
 */
export async function acquisitionScene(prefix: string) {
  const s = await retrievalScene(prefix);
  const methods = nodeTransferMethods({ fileRoots: [] });
  // As on a Node mover: the bytes a subscription verified are what its retriever stores.
  const intake = nodeWis2Intake();
  const sourceHosts = sourceHostOpener(s.h.ports, s.h.ports.repos.retrieval, methods, subscriptionReader(intake));
  const retriever = startRetriever(
    { ...s.deps, sourceHosts },
    { name: 'retriever', concurrency: 4, leaseMs: 5000, pollMs: 50 },
  );
  s.mover();
  const ctx = { ports: s.h.ports, requestId: 'acquisition', caller: null };
  const startOne = () =>
    startAcquirer(
      { ctx, methods, wis2: { intake, subscriber: mqttSubscriber() } },
      { name: 'acq', concurrency: 4, most: 4, leaseMs: 3000, pollMs: 50 },
    );
  let acquirer: Acquirer | null = startOne();

  /** An Acquisition destination (sending nowhere) with one Acquisition host listing `lines`; answers the host's id. */
  async function acquisitionHost(name: string, host: TestHost & { dir: string }) {
    const nickname = `${name.toLowerCase()}-acq`;
    const acquiring = { type: 'Acquisition', nickname, acquisitionFrequency: 300, ...host };
    await restoreDestination(s.h, s.admin, name, [acquiring], { destination: { type: 0 } });
    const [row] = await s.h.db.select({ id: hosts.hostid }).from(hosts).where(eq(hosts.nickname, nickname));
    return row!.id;
  }

  const lastRun = (hostId: number) => s.h.ports.repos.acquisition.lastRun(hostId);
  const finishedAt = async (hostId: number) => (await lastRun(hostId))?.finishedAt?.getTime() ?? null;

  /** The host's next run to finish after the one that finished at `after` (its first when null: a new host). */
  async function nextRun(hostId: number, after?: number | null): Promise<RunShown> {
    const since = after === undefined ? await finishedAt(hostId) : after;
    return s.eventually(
      async () => {
        const run = await lastRun(hostId);
        const at = run?.finishedAt?.getTime() ?? null;
        return at !== null && at !== since ? run! : undefined;
      },
      20_000,
      `a run of host ${hostId}`,
    );
  }

  const transfersOf = (destination: string) =>
    s.h.db
      .select({
        id: dataTransfers.id,
        target: dataTransfers.target,
        status: dataTransfers.status,
        fileId: dataTransfers.dataFileId,
        uniqueName: dataTransfers.uniqueName,
      })
      .from(dataTransfers)
      .where(eq(dataTransfers.destination, destination))
      .orderBy(dataTransfers.id);

  /** The MD5 of the file's stored copy; null until it is retrieved. */
  const storedMd5 = async (fileId: number) =>
    (await s.h.db.select().from(dataFiles).where(eq(dataFiles.id, fileId)))[0]?.checksum ?? null;

  /** Waits until every transfer of the destination is DONE (retrieved, for one sending nowhere); answers them. */
  const allDone = (destination: string, count: number) =>
    s.eventually(
      async () => {
        const all = await transfersOf(destination);
        return all.length === count && all.every((t) => t.status === 'DONE') ? all : undefined;
      },
      20_000,
      `${count} transfer(s) of ${destination} DONE`,
    );

  /** Waits until each of `files` (name: bytes) is acquired once into `destination` and DONE, its stored copy theirs. */
  async function retrievedOnce(destination: string, files: Record<string, Buffer>) {
    const names = Object.keys(files).sort();
    const acquired = await allDone(destination, names.length);
    expect(acquired.map((t) => t.target).sort()).toEqual(names);
    for (const t of acquired) expect(await storedMd5(t.fileId)).toBe(md5(files[t.target]!));
    return acquired;
  }

  /** The host's next run finds each of `names` acquired already, and acquires none of them again. */
  async function foundAgain(destination: string, hostId: number, names: string[]) {
    const again = await nextRun(hostId);
    for (const name of names) expect(again.output).toContain(`${name} (${destination}/${name}): not selected: exists`);
    expect((await transfersOf(destination)).length).toBe(names.length);
  }

  /** The value of a /metrics series, by its full name with labels; 0 when absent. */
  let metricsAuth: string | null = null;
  async function metric(series: string) {
    metricsAuth ??= await s.h.client('prometheus', ['metrics']);
    const r = await s.h.call('GET', '/metrics', { auth: metricsAuth });
    const line = r.text.split('\n').find((l) => l.startsWith(`${series} `));
    return line ? Number(line.slice(series.length + 1)) : 0;
  }

  return {
    ...s,
    methods,
    metric,
    retrievedOnce,
    foundAgain,
    acquisitionHost,
    lastRun,
    finishedAt,
    nextRun,
    firstRun: (hostId: number) => nextRun(hostId, null),
    transfersOf,
    storedMd5,
    allDone,
    async stopAcquirer() {
      await acquirer?.stop();
      acquirer = null;
    },
    startAcquirer() {
      acquirer ??= startOne();
    },
    async close() {
      await acquirer?.stop();
      await retriever.stop();
      await s.close();
      await Promise.all(Object.values(methods).map((m) => m.close()));
    },
  };
}

export type AcquisitionScene = Awaited<ReturnType<typeof acquisitionScene>>;

/** Writes a file with the modification time given (now when none). */
export function writeFile(dir: string, name: string, content: string | Buffer, time?: Date) {
  fs.writeFileSync(path.join(dir, name), content);
  if (time) fs.utimesSync(path.join(dir, name), time, time);
}

export const minutesAgo = (n: number) => new Date(Date.now() - n * 60_000);

/**
 * A centre's data server for WIS2 tests: plain HTTP on 127.0.0.1 serving the files of a directory of its own by
 * their name, and the paths asked for, in order.
 */
export async function wis2DataServer() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-wis2-served-'));
  const downloads: string[] = [];
  const server = http.createServer((req, res) => {
    downloads.push(req.url ?? '');
    const file = path.join(dir, path.basename(req.url ?? ''));
    if (!fs.existsSync(file)) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/bufr' }).end(fs.readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    dir,
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    downloads,
    async close() {
      await new Promise((resolve) => server.close(resolve));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, expect } from 'vitest';
import { type Acquirer, startAcquirer } from '../../core/acquisition/acquirer.ts';
import type { RunShown } from '../../core/acquisition/ports.ts';
import type { ListedEntry } from '../../core/acquisition/selection.ts';
import { subscriptionReader } from '../../core/acquisition/wis2-source.ts';
import type { HostConnection, TransferMethod } from '../../core/dissemination/methods.ts';
import { startRetriever } from '../../core/retrieval/retriever.ts';
import { sourceHostOpener } from '../../core/retrieval/source-host.ts';
import { dataFiles, dataTransfers, hosts } from '../../db/schema.ts';
import { nodeWis2Intake } from '../../functions/node/wis2-intake.ts';
import { mqttSubscriber } from '../../functions/node/wis2-subscribe.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import { md5, retrievalScene } from '../retrieval/support.ts';
import type { TestHost } from '../support/backups.ts';
import { restoreDestination } from '../support/engine.ts';
import { type NginxIndex, startNginxIndex } from '../support/servers/nginx-index.ts';
import { type SlowProxy, startSlowProxy } from '../support/servers/slow-proxy.ts';
import { scaled } from '../support/time.ts';
import { hostFor, payload } from '../support/transfer.ts';

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

  /**
   * The first run of a host listing `{.*\.bin}` over a.bin, b.bin and notes.txt: done, notes.txt not selected
   * (nor `directory`, when given, as a directory), a.bin scheduled into `destination`.
   */
  async function firstRunSelects(hostId: number, destination: string, directory?: string) {
    const run = await nextRun(hostId, null);
    expect(run.outcome, run.output).toBe('done');
    expect(run.output).toContain('notes.txt: not selected: name not matching {.*\\.bin}');
    if (directory) expect(run.output).toContain(`${directory}: not selected: a directory`);
    expect(run.output).toMatch(
      new RegExp(`a\\.bin \\(${destination}/a\\.bin\\): selected: scheduled with DataFileId=\\d+`),
    );
    return run;
  }

  /**
   * The scenarios every listing method must pass on its own server's times and errors, each in a directory of
   * its own: a host down fails its run and registers nothing, and its files come once it is back; a file younger
   * than fileage is left; a file changed at the host is acquired again under requeueon, as the same transfer with
   * the new bytes. `host(directory, data)` is an Acquisition host of the server listing `*.bin` in `directory`;
   * `write` puts a file there now, timed by the server's clock.
   */
  async function onItsServer(
    name: string,
    host: (directory: string, data: string) => TestHost & { dir: string; host: string },
    write: (directory: string, file: string, bytes: Buffer) => Promise<void>,
  ) {
    const down = `${name.toLowerCase()}-down`;
    await write(down, 'e.bin', Buffer.from('e'));
    const back = host(down, '');
    // Its address (in the host's options too: s3.url, azure.url) replaced by one nothing listens on.
    const address = `127.0.0.1:${await closedPort()}`;
    const elsewhere = { ...back, host: address, data: (back.data ?? '').replaceAll(back.host, address) };
    const downId = await acquisitionHost(`${name}_DOWN`, elsewhere);
    const failed = await nextRun(downId, null);
    expect(failed.outcome, failed.output).toBe('failed');
    expect(failed.output).toMatch(/Z Run failed: .*(ECONNREFUSED|refused)/);
    if (back.passwd) expect(failed.output).not.toContain(back.passwd);
    expect(await transfersOf(`${name}_DOWN`)).toEqual([]);
    await s.h.db
      .update(hosts)
      .set({ host: back.host, data: back.data ?? '' })
      .where(eq(hosts.hostid, downId));
    await allDone(`${name}_DOWN`, 1);

    const young = `${name.toLowerCase()}-age`;
    await write(young, 'young.bin', Buffer.from('y'));
    const youngId = await acquisitionHost(`${name}_AGE`, host(young, 'acquisition.fileage = ">=1h"'));
    const left = await nextRun(youngId, null);
    expect(left.output).toMatch(/young\.bin: not selected: wrong age: \d+ s \(fileage >=1h\)/);
    expect(await transfersOf(`${name}_AGE`)).toEqual([]);

    const changing = `${name.toLowerCase()}-change`;
    await write(changing, 'c.bin', Buffer.from('first'));
    const changedId = await acquisitionHost(
      `${name}_CHANGE`,
      host(changing, 'acquisition.requeueon = "$time2 > $time1"'),
    );
    // Stored before the file changes: a retrieval after it would find another size and fail.
    const [before] = await allDone(`${name}_CHANGE`, 1);
    // Some servers list times in whole seconds: the new one must be later.
    await new Promise((r) => setTimeout(r, 1_100));
    await write(changing, 'c.bin', Buffer.from('second, longer'));
    const requeued = await s.eventually(
      async () => ((await lastRun(changedId))?.output.includes('re-queued') ? lastRun(changedId) : undefined),
      20_000,
      `${name}: c.bin re-queued`,
    );
    expect(requeued!.output).toMatch(new RegExp(`c\\.bin \\(${name}_CHANGE/c\\.bin\\): selected: re-queued`));
    await s.eventually(
      async () => ((await storedMd5(before!.fileId)) === md5(Buffer.from('second, longer')) ? true : undefined),
      20_000,
      `${name}: the new bytes retrieved`,
    );
    expect((await transfersOf(`${name}_CHANGE`)).map((t) => t.id)).toEqual([before!.id]);
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
    firstRunSelects,
    onItsServer,
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

/** What an Acquisition host's directory holds in the end-to-end tests: two .bin files to acquire, a .txt not to. */
export const acquisitionFiles = () => ({
  'a.bin': Buffer.alloc(70_000, 1),
  'b.bin': Buffer.alloc(30_000, 2),
  'notes.txt': Buffer.from('no'),
});

/** A signal no one aborts. */
export const live = () => new AbortController().signal;

export const byName = <T extends { name: string }>(entries: T[]) => Object.fromEntries(entries.map((e) => [e.name, e]));

/** Resolves once `condition` holds, asked every 20 ms; rejects after `ms` (scaled). */
export async function waitFor(condition: () => boolean, ms = 10_000) {
  const until = Date.now() + scaled(ms);
  while (!condition()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The login of the web servers the listing tests list. */
export const LISTING_AUTH = { user: 'ecpds', password: 'pä ss!' };

/**
 * For the listing tests of a web method: nginx serving an index (and WebDAV, with `propfind`) behind LISTING_AUTH,
 * and a proxy in front of it that passes no byte on; up before the tests, down after them with `method`.
 */
export function webListing(method: TransferMethod, options: { propfind?: boolean } = {}) {
  let server: NginxIndex;
  let proxy: SlowProxy;
  beforeAll(async () => {
    server = await startNginxIndex({ ...options, auth: LISTING_AUTH });
    proxy = await startSlowProxy(server.port);
    proxy.stallAfterBytes = 0;
  });
  afterAll(async () => {
    await method.close();
    await proxy?.stop();
    await server?.stop();
  });
  /** Writes a file under the server's root, its directories made, with the modification time given. */
  const plant = (relative: string, content: string | Buffer, time?: Date) => {
    const file = path.join(server.root, relative);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
    if (time) fs.utimesSync(file, time, time);
  };
  return {
    get server() {
      return server;
    },
    plant,

    /**
     * A `method` host on the server (or at `port`), as an acquisition run connects: the host's directory left out, the
     * listed one given whole.
     */
    host(
      method: 'http' | 'webdav',
      options: Record<string, string> = {},
      password = LISTING_AUTH.password,
      port = server.port,
    ): HostConnection {
      return hostFor(
        method,
        { hostname: `127.0.0.1:${port}`, login: LISTING_AUTH.user, password, directory: '' },
        options,
      );
    },

    /**
     * Plants a.grib2 (1234 bytes), `other` (5 bytes) and a directory sub in `in/d ir`, and lists it with `list`, as
     * `in/d ir` and `/in/d ir/`: each with its type and size, the files' time to the second (as HTTP dates are).
     * Answers the entries by name.
     */
    async listedInDir(list: (directory: string) => Promise<ListedEntry[]>, other: string) {
      const time = new Date('2026-01-02T03:04:05.678Z');
      plant('in/d ir/a.grib2', Buffer.alloc(1234), time);
      plant(`in/d ir/${other}`, 'hello', time);
      fs.mkdirSync(path.join(server.root, 'in/d ir/sub'));
      const listed = byName(await list('in/d ir'));
      expect(Object.keys(listed).sort()).toEqual(['a.grib2', other, 'sub'].sort());
      expect(listed['a.grib2']).toMatchObject({ type: 'file', size: 1234 });
      expect(listed['a.grib2']!.time!.getTime()).toBe(Math.floor(time.getTime() / 1000) * 1000);
      expect(listed[other]).toMatchObject({ type: 'file', size: 5 });
      expect(listed.sub).toMatchObject({ type: 'directory', size: null });
      const absolute = await list('/in/d ir/');
      expect(absolute.map((e) => e.name).sort()).toEqual(Object.keys(listed).sort());
      return listed;
    },

    /**
     * An aborted listing rejects with the abort's reason: aborted before, and aborted while `list` waits for the
     * server, through the proxy (`port`), at once.
     */
    async listingAborts(list: (signal: AbortSignal, port?: number) => Promise<unknown>) {
      const controller = new AbortController();
      controller.abort(new Error('run cut at maximumDuration'));
      await expect(list(controller.signal)).rejects.toThrow('maximumDuration');

      const stalled = new AbortController();
      const listing = list(stalled.signal, proxy.port);
      setTimeout(() => stalled.abort(new Error('run cut while listing')), 200);
      const started = Date.now();
      await expect(listing).rejects.toThrow('run cut while listing');
      expect(Date.now() - started).toBeLessThan(2_000);
    },

    /**
     * `list` fails on a missing directory with its name, and with a wrong password as `failure` says, naming neither
     * that password nor the right one.
     */
    async failsWithoutSecrets(list: (directory: string, password?: string) => Promise<unknown>, failure: RegExp) {
      await expect(list('/no/such/place')).rejects.toThrow('No such directory /no/such/place');
      const wrong = 'not-the-password-123';
      const error = await list('in', wrong).catch((e: Error) => e);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(failure);
      expect((error as Error).message).not.toContain(wrong);
      expect((error as Error).message).not.toContain(LISTING_AUTH.password);
    },
  };
}

/**
 * Puts what the prefix listing tests of an object store list: `list/` with a.bin (1234 bytes), `b c+d.txt` (5) and
 * deeper ones under sub/, and `listing/x.bin` (the prefix's characters, not its directory). Answers when it began and
 * ended, in ms.
 */
export async function putListed(put: (name: string, bytes: Uint8Array) => Promise<unknown>) {
  const before = Date.now();
  await put('list/a.bin', payload(1234));
  await put('list/b c+d.txt', payload(5, 2));
  await put('list/sub/c.bin', payload(10));
  await put('list/sub/deeper/d.bin', payload(10));
  await put('listing/x.bin', payload(10));
  return { before, after: Date.now() };
}

/**
 * `directory` (`list/` as putListed left it) listed with `list`: the objects right under it files, with their size
 * and a time between `before` (to the second) and `after`; what is deeper, directories; sub/ listed at `subDirectory`.
 */
export async function listsPrefix(
  list: (directory: string) => Promise<ListedEntry[]>,
  directory: string,
  subDirectory: string,
  { before, after }: { before: number; after: number },
) {
  const entries = await list(directory);
  expect(entries.map((e) => e.name).sort()).toEqual(['a.bin', 'b c+d.txt', 'sub']);
  const { 'a.bin': a, sub } = byName(entries);
  expect(a).toMatchObject({ type: 'file', size: 1234 });
  // Some services keep the time to the second, others to the millisecond.
  expect(a!.time!.getTime()).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
  expect(a!.time!.getTime()).toBeLessThanOrEqual(after + 1000);
  expect(sub).toEqual({ name: 'sub', type: 'directory', size: null, time: null });
  expect(byName(await list(subDirectory))).toMatchObject({
    'c.bin': { type: 'file', size: 10 },
    deeper: { type: 'directory' },
  });
}

/** A port nothing listens on: a host down. */
export async function closedPort() {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asc, eq, sql } from 'drizzle-orm';
import { expect } from 'vitest';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import type { RetrievalClaim } from '../../core/retrieval/ports.ts';
import { type RetrievalDeps, retrieve } from '../../core/retrieval/retrieve.ts';
import { type Retriever, startRetriever } from '../../core/retrieval/retriever.ts';
import type { ObjectStore } from '../../core/store/ports.ts';
import { rowsOf } from '../../db/client.ts';
import { dataFiles, dataTransfers, storedObjects, transferHistory } from '../../db/schema.ts';
import { parallelSumming } from '../../functions/node/parallel-sums.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { directoryStore } from '../../functions/store/directory-store.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import { destinationBackup } from '../support/backups.ts';
import { eventually, restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import type { Sshd } from '../support/servers/sshd.ts';

export const md5 = (bytes: Buffer) => createHash('md5').update(bytes).digest('hex');

/**
 * A harness whose puts are retrieved into a directory store, with the sources in a directory of
 * their own; retrievers and movers are started by the tests that need them, and stopped by `close`.
 */
export async function retrievalScene(prefix: string) {
  const sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `ecpds-${prefix}-src-`)));
  const storeRoot = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `ecpds-${prefix}-store-`)));
  const store: ObjectStore = directoryStore(storeRoot);
  const h: Harness = await createHarness({ sourceRoots: [sources], store });
  const admin = await h.client('operator', ['.*']);
  const reader = nodeSourceReader({ roots: [sources], hosts: [] });
  // As the Node mover does: files of a few MiB and more are summed on worker threads.
  const deps: RetrievalDeps = {
    ports: h.ports,
    repo: h.ports.repos.retrieval,
    store,
    sources: reader,
    summing: parallelSumming(),
  };
  const stoppers: Array<() => Promise<void>> = [];
  let files = 0;

  /** Registers a file of random bytes (or the given ones) through datafile/put. */
  async function put(
    destination: string,
    over: { bytes?: Buffer; size?: number; target?: string; force?: boolean; standby?: boolean } = {},
  ) {
    const content = over.bytes ?? randomBytes(over.size ?? 100_000);
    const target = over.target ?? `f${++files}.bin`;
    const source = path.join(sources, `${destination}-${target}`);
    fs.writeFileSync(source, content);
    const q = new URLSearchParams({
      destination,
      source,
      target,
      ...(over.force && { force: 'true' }),
      ...(over.standby && { standby: 'true' }),
    });
    const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
    expect(r.status, r.text).toBe(200);
    return { fileId: r.json.id as number, target, source, content };
  }

  const transfersOf = (fileId: number) =>
    h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, fileId)).orderBy(asc(dataTransfers.id));
  const fileRow = async (fileId: number) => (await h.db.select().from(dataFiles).where(eq(dataFiles.id, fileId)))[0]!;
  const historyOf = (transferId: number) =>
    h.db
      .select()
      .from(transferHistory)
      .where(eq(transferHistory.transferId, transferId))
      .orderBy(asc(transferHistory.id));
  const objectsOf = (fileId: number) =>
    h.db.select().from(storedObjects).where(eq(storedObjects.dataFileId, fileId)).orderBy(asc(storedObjects.storedAt));
  /** The keys the store holds, partial writes included. */
  const storeFiles = () => {
    const found: string[] = [];
    const walk = (dir: string, prefix: string) => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const key = prefix ? `${prefix}/${e.name}` : e.name;
        if (e.isDirectory()) walk(path.join(dir, e.name), key);
        else found.push(key);
      }
    };
    walk(storeRoot, '');
    return found.sort();
  };
  /** Milliseconds from the database's now to the file's next retrieval. */
  const fetchInMs = async (fileId: number) => {
    const rows = await h.db.execute(
      sql`select extract(epoch from (fetch_at - now())) * 1000 as ms from data_files where id = ${fileId}`,
    );
    const ms = rowsOf<{ ms: string | number | null }>(rows)[0]?.ms;
    return ms === null || ms === undefined ? null : Number(ms);
  };

  /** Claims what is due as `mover` and retrieves it, in the test's own pace. */
  async function retrieveDue(mover = 'test-mover', leaseMs = 30_000) {
    const claims = await h.ports.repos.retrieval.claim(mover, leaseMs, 100);
    const outcomes = [];
    for (const claim of claims) outcomes.push(await retrieve(deps, mover, claim, new AbortController().signal));
    return { claims, outcomes };
  }
  const retrieveOne = (mover: string, claim: RetrievalClaim) =>
    retrieve(deps, mover, claim, new AbortController().signal);

  function retriever(name = 'retriever'): Retriever {
    const r = startRetriever(deps, { name, concurrency: 4, leaseMs: 5000, pollMs: 50 });
    stoppers.push(() => r.stop());
    return r;
  }
  function mover(name = 'mover'): Mover {
    const m = startMover(
      { ports: h.ports, methods: nodeTransferMethods({ fileRoots: [] }), sources: reader },
      { name, concurrency: 4, leaseMs: 3000, heartbeatMs: 200, pollMs: 40 },
    );
    stoppers.push(() => m.stop(5000));
    return m;
  }

  /** A destination sending to a directory of the sshd, left stopped unless `start`. */
  async function sftpDestination(sshd: Sshd, name: string, start = false) {
    const dir = sshd.scratch(`${name.toLowerCase()}-`);
    const host = {
      method: 'sftp' as const,
      host: `127.0.0.1:${sshd.port}`,
      login: sshd.user,
      passwd: sshd.password,
      dir,
    };
    await restoreDestination(h, admin, name, [host], { start });
    return dir;
  }
  /** Destinations without hosts (enough to put files to), with their options text and the aliases between them. */
  async function quietDestinations(
    list: Array<{ name: string; data?: string }>,
    aliases: Array<[string, string]> = [],
  ) {
    const entries = list.map(
      ({ name, data }) => destinationBackup(name, [], { destination: { data: data ?? '' } }).backup.destinations[0],
    );
    const body = {
      backup: { destinations: entries, aliases: aliases.map(([aliasFrom, aliasTo]) => ({ aliasFrom, aliasTo })) },
    };
    const r = await h.call('PUT', '/v1/destination/backup', { auth: admin, body });
    expect(r.status, r.text).toBe(200);
  }

  const statusIs = (transferId: number, status: string) => async () => {
    const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, transferId));
    return t?.status === status ? t : undefined;
  };

  return {
    h,
    admin,
    sources,
    storeRoot,
    store,
    deps,
    put,
    transfersOf,
    fileRow,
    historyOf,
    objectsOf,
    storeFiles,
    fetchInMs,
    retrieveDue,
    retrieveOne,
    retriever,
    mover,
    sftpDestination,
    quietDestinations,
    statusIs,
    eventually,
    async close() {
      for (const stop of stoppers.splice(0).reverse()) await stop();
      await h.close();
      fs.rmSync(sources, { recursive: true, force: true });
      fs.rmSync(storeRoot, { recursive: true, force: true });
    },
  };
}

export type RetrievalScene = Awaited<ReturnType<typeof retrievalScene>>;

/** The fields of an event line, in their order. */
export const fieldsOf = (line: string) =>
  line
    .split(';')
    .slice(1)
    .map((f) => [f.slice(0, f.indexOf('=')), f.slice(f.indexOf('=') + 1)] as const);

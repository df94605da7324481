import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_STORE_RETENTION, sweepStore } from '../../../core/retention/objects.ts';
import { DEFAULT_RETENTION } from '../../../core/retention/purge.ts';
import { sweep } from '../../../core/retention/sweep.ts';
import { retrieve } from '../../../core/retrieval/retrieve.ts';
import { retrievalRepo } from '../../../db/repositories/retrieval.ts';
import { nodeSourceReader } from '../../../functions/node/sources.ts';
import { directoryStore } from '../../../functions/store/directory-store.ts';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, incomingUser } from '../support.ts';
import { download, expectDownloadMatches, subscriber, type Wis2Scene, wis2Destination, wis2Scene } from './support.ts';

/**
 * Versioned WIS2 links over a directory store: a message links to the version it announced, which
 * keeps serving those bytes after an update until the sweep removes it; the sweep also removes the
 * objects of deleted files and objects no data file knows, once old enough.
 */

let s: Wis2Scene<Awaited<ReturnType<typeof subscriber>>>;
let storeDir: string;
const ALICE = { user: 'alice', password: 'Secret-1' };
const DEST = 'VERSIONS';
const TOPIC = 'origin/a/wis2/xx-ecpds/data/recommended/weather/versions';

function put(target: string, bytes: Buffer, query: Record<string, string> = {}) {
  const source = `${s.sources}/${DEST}/${target}`;
  fs.mkdirSync(path.dirname(source), { recursive: true });
  fs.writeFileSync(source, bytes);
  const params = new URLSearchParams({ destination: DEST, source, target, ...query });
  return s.h.call('GET', `/v1/datafile/put?${params}`, { auth: s.admin });
}

/** Retrieves every file waiting for its bytes, as a retriever next to a mover does. */
async function retrieveAll() {
  const repo = retrievalRepo(s.h.db);
  const deps = {
    ports: s.h.ports,
    repo,
    store: s.h.ports.store!,
    sources: nodeSourceReader({ roots: [s.sources], hosts: [] }),
  };
  for (const claim of await repo.claim('test-mover', 60_000, 10)) {
    expect(await retrieve(deps, 'test-mover', claim, new AbortController().signal)).toBe('stored');
  }
}

const storedFiles = () =>
  [...fs.readdirSync(storeDir, { recursive: true, withFileTypes: true })].filter((e) => e.isFile());
const sha512 = (b: Buffer) => createHash('sha512').update(b).digest('base64');

async function metric(name: string) {
  const r = await s.h.call('GET', '/metrics', { auth: s.admin });
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(r.text)?.[1]);
}

beforeAll(async () => {
  storeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-store-'));
  s = await wis2Scene({ subscribe: subscriber, portal: { store: directoryStore(storeDir) } });
  await incomingUser(s.h, s.admin, { id: 'alice', password: ALICE.password }, []);
  expect(await wis2Destination(s, DEST, { category: 'recommended/weather', users: ['alice'] })).toBe(TOPIC);
}, scaled(60_000));
afterAll(async () => {
  await s?.close();
  if (storeDir) fs.rmSync(storeDir, { recursive: true, force: true });
});

describe('a WIS2 link of a retrieved file', needs('mosquitto'), () => {
  it('serves the version it announced after an update, until the sweep removes it', async () => {
    const first = bytesOf(3000, 1);
    const second = bytesOf(5000, 2);
    const r = await put('obs/a.bufr', first);
    expect(r.status, r.text).toBe(200);
    await retrieveAll();
    const [announced] = await s.sub.on(TOPIC, 1);
    expect(announced!.message.links[0].href).toContain('?v=');
    expect(announced!.message.properties.integrity?.value).toBe(sha512(first));
    expect(await expectDownloadMatches(announced!, ALICE)).toEqual(first);

    expect((await put('obs/a.bufr', second, { force: 'true' })).status).toBe(200);
    await retrieveAll();
    const updated = (await s.sub.on(TOPIC, 2))[1]!;
    expect(updated.message.links[0].href).not.toBe(announced!.message.links[0].href);
    expect(await expectDownloadMatches(updated, ALICE)).toEqual(second);
    // The first link still serves the bytes it announced; the plain path serves the newest.
    expect(await expectDownloadMatches(announced!, ALICE)).toEqual(first);
    const plainHref = announced!.message.links[0].href.split('?')[0]!;
    expect((await download(plainHref, ALICE)).body).toEqual(second);
    expect(await metric('ecpds_store_objects')).toBe(2);
    expect(await metric('ecpds_store_bytes')).toBe(first.length + second.length);

    // Within the time superseded copies are kept, nothing goes; past it, the old version does.
    expect((await sweep(s.h.ports, DEFAULT_RETENTION)).store.objects).toBe(0);
    const gone = await sweepStore(s.h.ports, { ...DEFAULT_STORE_RETENTION, supersededKeepHours: 0 });
    expect(gone).toMatchObject({ objects: 1, bytes: first.length });
    expect((await download(announced!.message.links[0].href, ALICE)).status).toBe(404);
    expect(await expectDownloadMatches(updated, ALICE)).toEqual(second);
    expect(storedFiles()).toHaveLength(1);
    expect(await metric('ecpds_store_objects')).toBe(1);

    // A deleted file's objects go at the next sweep.
    const del = await s.h.call('DELETE', `/v1/datafile/del?id=${r.json.id}`, { auth: s.admin });
    expect(del.status, del.text).toBe(200);
    expect((await sweep(s.h.ports, DEFAULT_RETENTION)).store).toMatchObject({ objects: 1, bytes: second.length });
    expect(storedFiles()).toHaveLength(0);
    expect(await metric('ecpds_store_bytes')).toBe(0);
    expect((await download(updated.message.links[0].href, ALICE)).status).toBe(404);
  });

  it('removes the objects of a file once all its transfers expired', async () => {
    const r = await put('obs/short.bufr', bytesOf(100, 3), { lifetime: '2s' });
    expect(r.status, r.text).toBe(200);
    await retrieveAll();
    expect(storedFiles()).toHaveLength(1);
    expect((await sweep(s.h.ports, DEFAULT_RETENTION)).store.objects).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect((await sweep(s.h.ports, DEFAULT_RETENTION)).store.objects).toBe(1);
    expect(storedFiles()).toHaveLength(0);
  });

  it('removes objects no data file knows once older than the grace period', async () => {
    const old = path.join(storeDir, '9', 'orphan-old');
    const young = path.join(storeDir, '9', 'orphan-young');
    fs.mkdirSync(path.dirname(old), { recursive: true });
    fs.writeFileSync(old, 'old');
    fs.writeFileSync(young, 'young');
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    fs.utimesSync(old, twoHoursAgo, twoHoursAgo);
    const swept = await sweepStore(s.h.ports, DEFAULT_STORE_RETENTION, { orphans: true });
    expect(swept.orphans).toBe(1);
    expect(fs.existsSync(old)).toBe(false);
    expect(fs.existsSync(young)).toBe(true);
  });
});

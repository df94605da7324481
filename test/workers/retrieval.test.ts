import { createExecutionContext, createMessageBatch, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { setDestinationStatus } from '../../core/dissemination/operator.ts';
import { openPostgres } from '../../db/client.ts';
import { dataFiles, storedObjects } from '../../db/schema.ts';
import { edgeWorker } from '../../functions/worker.ts';
import {
  createIsolate,
  type DeliveryMessage,
  type DeliveryQueue,
  type WorkerEnv,
} from '../../functions/workers/runtime.ts';
import { destinationBackup, type TestHost } from '../support/backups.ts';
import { readReply } from '../support/reply.ts';
import { client, sourceBucket, sourcePort, withPorts, workerEnv } from './support.ts';

/**
 * A Worker with a store (ECPDS_STORE_BINDING, Miniflare's local R2): its puts wait in SCHE, its cron
 * retrieves them into the store (FETC, then WAIT), and its sends read the stored copy, whatever
 * became of the source since.
 */
const stamp = Date.now().toString(36).toUpperCase();
const PREFIX = `retrieval-${stamp.toLowerCase()}`;
const storeEnv: WorkerEnv = {
  ...workerEnv,
  ECPDS_STORE_BINDING: 'ECPDS_STORE',
  ECPDS_STORE_PREFIX: PREFIX,
};
// An isolate of its own: the suite's other files run the Worker without a store.
const isolate = createIsolate(storeEnv);
const worker = edgeWorker(() => isolate);
const storeBucket = (env as unknown as { ECPDS_STORE: R2Bucket }).ECPDS_STORE;
const deliveries = (env as unknown as { ECPDS_R2: R2Bucket }).ECPDS_R2;
let admin: string;
let hostids = 70_000 + Math.floor(Math.random() * 9000);
let seeds = 500;

const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');
const sha512 = (bytes: Uint8Array) => createHash('sha512').update(bytes).digest('base64');
const pattern = (size: number, seed: number) => new Uint8Array(size).map((_, i) => (31 * i + seed) & 255);

beforeAll(async () => {
  admin = await client(`wretr_${stamp.toLowerCase()}`, ['.*']);
});

async function call(method: string, path: string, body?: unknown) {
  const headers: Record<string, string> = { authorization: admin };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const ctx = createExecutionContext();
  const request = new Request(`https://edge.test${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const reply = await readReply(await worker.fetch(request, storeEnv, ctx));
  await waitOnExecutionContext(ctx);
  return reply;
}

const R2_HOST: TestHost = { method: 'r2', data: 'r2.binding = "ECPDS_R2"' };

/** A destination delivering to the bound R2 bucket ECPDS_R2 (or to `host`), started. */
async function destination(suffix: string, host: TestHost = R2_HOST) {
  const name = `T${stamp}${suffix}`;
  const body = destinationBackup(name, [{ ...host, dir: name.toLowerCase() }], { nextHostId: () => ++hostids });
  const r = await call('PUT', '/v1/destination/backup', body);
  expect(r.status, r.text).toBe(200);
  await withPorts((ports) => setDestinationStatus(ports, 'test', name, 'start'));
  return name;
}

/** Puts `source` through the Worker with a store; answers the file's id and its transfer. */
async function put(name: string, source: string, target: string) {
  const q = new URLSearchParams({ destination: name, source, target });
  const r = await call('GET', `/v1/datafile/put?${q}`);
  expect(r.status, r.text).toBe(200);
  const dataFileId = r.json.id as number;
  const transferId = await withPorts(async (ports) => {
    const list = await ports.repos.transfers.list({ limit: 1000 });
    return list.find((t) => t.dataFileId === dataFileId)!.id;
  });
  return { dataFileId, transferId, target };
}

/** An object of the source bucket, put as `target`: answers its bytes besides. */
async function putR2(name: string, size: number, target: string) {
  const bytes = pattern(size, ++seeds);
  const key = `retrieval/${stamp}/${seeds}.bin`;
  await sourceBucket().put(key, bytes);
  return { ...(await put(name, `r2://ECPDS_SOURCES/${key}`, target)), key, bytes };
}

/** A blob of the suite's http source server (global-setup.ts), put as `target`. */
async function putHttp(name: string, size: number, target: string) {
  const seed = ++seeds;
  return { ...(await put(name, `http://${sourcePort()}/blob/${seed}/${size}`, target)), bytes: pattern(size, seed) };
}

const transfer = (id: number) => withPorts(async (ports) => (await ports.repos.transfers.get(id))!);
const history = (id: number) =>
  withPorts(async (ports) => (await ports.repos.transfers.history(id)).map((h) => h.status));

/** The data file's stored copy as the database records it. */
async function storedCopy(dataFileId: number) {
  const handle = openPostgres(workerEnv.HYPERDRIVE.connectionString, { perRequest: true });
  try {
    const [file] = await handle.db
      .select({ objectKey: dataFiles.objectKey, retrievedAt: dataFiles.retrievedAt })
      .from(dataFiles)
      .where(eq(dataFiles.id, dataFileId));
    const objects = await handle.db.select().from(storedObjects).where(eq(storedObjects.dataFileId, dataFileId));
    return { file, objects };
  } finally {
    await handle.close();
  }
}

/** The Worker's cron; answers the destinations it queued. */
async function cron() {
  const sent: string[] = [];
  const queue: DeliveryQueue = {
    send: async (body) => void sent.push(body.destination),
    sendBatch: async (messages) => {
      for (const m of messages) sent.push(m.body.destination);
    },
  };
  const ctx = createExecutionContext();
  await worker.scheduled({}, { ...storeEnv, ECPDS_QUEUE: queue }, ctx);
  await waitOnExecutionContext(ctx);
  return sent;
}

/** One batch of the delivery queue through the Worker with a store. */
async function consume(names: string[]) {
  const messages = names.map((destination, i) => ({
    id: `r${i}-${Math.random()}`,
    timestamp: new Date(),
    attempts: 1,
    body: { destination } satisfies DeliveryMessage,
  }));
  const ctx = createExecutionContext();
  await worker.queue(createMessageBatch<DeliveryMessage>('ecpds-deliveries', messages), storeEnv, ctx);
  await waitOnExecutionContext(ctx);
}

async function delivered(name: string, target: string) {
  const object = await deliveries.get(`${name.toLowerCase()}/${target}`);
  return object && md5(new Uint8Array(await object.arrayBuffer()));
}

describe('a Worker with a store', () => {
  it('puts in SCHE; its cron retrieves into R2 (FETC, then WAIT) with the stored_objects row, and queues them', async () => {
    const name = await destination('RET');
    const files = [await putR2(name, 300_000, 'r2.bin'), await putHttp(name, 70_000, 'http.bin')];
    for (const f of files) {
      expect((await transfer(f.transferId)).status).toBe('SCHE');
      expect(await history(f.transferId)).toEqual(['SCHE']);
      expect((await storedCopy(f.dataFileId)).file?.objectKey).toBeNull();
    }

    expect(await cron()).toContain(name);
    for (const f of files) {
      expect((await transfer(f.transferId)).status).toBe('WAIT');
      expect(await history(f.transferId)).toEqual(['SCHE', 'FETC', 'WAIT']);
      const { file, objects } = await storedCopy(f.dataFileId);
      expect(file?.objectKey).toBeTruthy();
      expect(file?.retrievedAt).toBeInstanceOf(Date);
      expect(objects.map((o) => [o.key, o.size, o.md5, o.sha512, o.supersededAt])).toEqual([
        [file?.objectKey, f.bytes.length, md5(f.bytes), sha512(f.bytes), null],
      ]);
      const object = await storeBucket.get(`${PREFIX}/${file?.objectKey}`);
      expect(object?.size).toBe(f.bytes.length);
      expect(object && md5(new Uint8Array(await object.arrayBuffer()))).toBe(md5(f.bytes));
    }
  });

  it('sends the registered bytes from the store, the source since overwritten with as many bytes or deleted', async () => {
    const name = await destination('OWN');
    const overwritten = await putR2(name, 250_000, 'overwritten.bin');
    const deleted = await putR2(name, 40_000, 'deleted.bin');
    await cron();
    expect((await transfer(overwritten.transferId)).status).toBe('WAIT');
    // Run 12's bytes under run 00's name, and a spool cleaned after registering.
    await sourceBucket().put(overwritten.key, pattern(250_000, 99));
    await sourceBucket().delete(deleted.key);

    await consume([name]);
    for (const f of [overwritten, deleted]) {
      expect([(await transfer(f.transferId)).status, await history(f.transferId)]).toEqual([
        'DONE',
        ['SCHE', 'FETC', 'WAIT', 'EXEC', 'DONE'],
      ]);
      expect(await delivered(name, f.target)).toBe(md5(f.bytes));
    }
  });

  it('puts a file whose source is gone back in SCHE with the reason, and never in WAIT', async () => {
    const name = await destination('GONE');
    const gone = await putR2(name, 1000, 'gone.bin');
    await sourceBucket().delete(gone.key);
    await cron();
    const t = await transfer(gone.transferId);
    expect(t.status).toBe('SCHE');
    expect(t.message).toMatch(
      /^Retrieval failed on DataMover=edge-\w+ - Source r2:\/\/ECPDS_SOURCES\/.* no such object/,
    );
    expect((await history(gone.transferId)).slice(0, 3)).toEqual(['SCHE', 'FETC', 'SCHE']);
    expect((await storedCopy(gone.dataFileId)).objects).toEqual([]);
  });

  it('serves the registered bytes at the portal, whole and by range, the source since overwritten', async () => {
    const name = await destination('PORTAL', { method: 'portal' });
    const user = `wretr_user_${stamp.toLowerCase()}`;
    const password = `${user}-Pass-1`;
    const add = await call(
      'POST',
      `/v1/incoming/user/add?${new URLSearchParams({
        id: user,
        email: `${user}@example.org`,
        iso: 'gb',
        pass: password,
        active: 'true',
      })}`,
    );
    expect(add.status, add.text).toBe(200);
    const associated = await call('POST', `/v1/incoming/association/add?id=${user}&destination=${name}`);
    expect(associated.status, associated.text).toBe(200);
    const f = await putR2(name, 200_000, 'fc/run.bin');
    await cron();
    expect((await transfer(f.transferId)).status).toBe('WAIT');
    await sourceBucket().put(f.key, pattern(200_000, 77));

    const download = async (range?: string) => {
      const headers: Record<string, string> = {
        authorization: `Basic ${btoa(`${user}:${password}`)}`,
        'cf-connecting-ip': '10.9.1.1',
        ...(range && { range }),
      };
      const ctx = createExecutionContext();
      const res = await worker.fetch(
        new Request(`https://edge.test/portal/data/${name}/${f.target}`, { headers }),
        storeEnv,
        ctx,
      );
      const bytes = new Uint8Array(await res.arrayBuffer());
      await waitOnExecutionContext(ctx);
      return { status: res.status, md5: md5(bytes) };
    };
    expect(await download()).toEqual({ status: 200, md5: md5(f.bytes) });
    expect(await download('bytes=150000-159999')).toEqual({
      status: 206,
      md5: md5(f.bytes.subarray(150_000, 160_000)),
    });
  });
});

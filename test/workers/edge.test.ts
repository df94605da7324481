import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { createHash } from 'node:crypto';
import { AwsClient } from 'aws4fetch';
import { beforeAll, describe, expect, it } from 'vitest';
import { setDestinationStatus } from '../../core/dissemination/operator.ts';
import type { TransferView } from '../../core/dissemination/ports.ts';
import { dispatchDue } from '../../functions/edge/deliveries.ts';
import { type DeliveryMessage, type DeliveryQueue, workerConfig } from '../../functions/workers/runtime.ts';
import { destinationBackup, type TestHost } from '../support/backups.ts';
import { call, client, sourceBucket, sourcePort, withPorts, worker, workerEnv } from './support.ts';

/**
 * The edge's share of delivery inside workerd: the cron queues the due destinations whose hosts a
 * Worker reaches, the queue consumer claims, sends (to the local S3 server and Miniflare's R2) and
 * finishes through Hyperdrive; hosts it cannot reach and local sources are left to Node movers.
 */
const stamp = Date.now().toString(36).toUpperCase();
const s3Url = (env as unknown as { TEST_S3_URL: string }).TEST_S3_URL;
const bucket = (env as unknown as { ECPDS_R2: R2Bucket }).ECPDS_R2;
let admin: string;
let hostids = 90_000 + Math.floor(Math.random() * 9000);

beforeAll(async () => {
  admin = await client(`wedge_${stamp.toLowerCase()}`, ['.*']);
});

const s3Host = (over: Partial<TestHost> = {}): TestHost => ({
  method: 's3',
  host: '',
  login: 'S3RVER',
  passwd: 'S3RVER',
  data: `s3.url = "${s3Url}"\ns3.bucketName = "test-bucket"\ns3.enablePathStyleAccess = "yes"`,
  ...over,
});

/** A destination with its hosts (primary first), restored through the API and started. */
async function destination(suffix: string, hosts: TestHost[]) {
  const name = `E${stamp}${suffix}`;
  const body = destinationBackup(
    name,
    hosts.map((host) => ({ dir: name.toLowerCase(), ...host })),
    { nextHostId: () => ++hostids },
  );
  const r = await call('PUT', '/v1/destination/backup', { auth: admin, body });
  expect(r.status, r.text).toBe(200);
  await withPorts((ports) => setDestinationStatus(ports, 'test', name, 'start'));
  return name;
}

let seeds = 0;
/** Puts a file whose source is a blob of the test's http source server; answers its bytes' MD5. */
async function put(name: string, size: number) {
  const seed = ++seeds;
  const source = `http://${sourcePort()}/blob/${seed}/${size}`;
  const q = new URLSearchParams({ destination: name, source, target: `out/${seed}.bin` });
  const r = await call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const bytes = new Uint8Array(size).map((_, i) => (31 * i + seed) & 255);
  const transfer = await transferOf(r.json.id);
  return { transferId: transfer.id, target: transfer.target, md5: createHash('md5').update(bytes).digest('hex') };
}

/** Puts a file whose source is an object of the source bucket (`r2://ECPDS_SOURCES/<key>`); answers its bytes' MD5. */
async function putR2(name: string, size: number) {
  const seed = ++seeds;
  const bytes = new Uint8Array(size).map((_, i) => (31 * i + seed) & 255);
  const key = `edge/${stamp}/${seed}.bin`;
  await sourceBucket().put(key, bytes);
  const q = new URLSearchParams({ destination: name, source: `r2://ECPDS_SOURCES/${key}`, target: `out/${seed}.bin` });
  const r = await call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const transfer = await transferOf(r.json.id);
  return { key, transferId: transfer.id, target: transfer.target, md5: createHash('md5').update(bytes).digest('hex') };
}

const transferOf = async (dataFileId: number): Promise<TransferView> =>
  withPorts(async (ports) => {
    const list = await ports.repos.transfers.list({ limit: 1000 });
    return list.find((t) => t.dataFileId === dataFileId)!;
  });
const transfer = (id: number) => withPorts(async (ports) => (await ports.repos.transfers.get(id))!);
const history = (id: number) =>
  withPorts(async (ports) => (await ports.repos.transfers.history(id)).map((h) => h.status));

/** A queue producer that records what it was given. */
function recordingQueue(): DeliveryQueue & { sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    send: async (body) => void sent.push(body.destination),
    sendBatch: async (messages) => {
      for (const m of messages) sent.push(m.body.destination);
    },
  };
}

/** The Worker's cron, its queue recorded. */
async function cron() {
  const queue = recordingQueue();
  const ctx = createExecutionContext();
  await worker.scheduled({}, { ...workerEnv, ECPDS_QUEUE: queue }, ctx);
  await waitOnExecutionContext(ctx);
  return queue.sent;
}

/** One batch through the Worker's queue handler, as Cloudflare delivers it. */
async function consume(names: string[]) {
  const messages = names.map((destination, i) => ({
    id: `m${i}-${Math.random()}`,
    timestamp: new Date(),
    attempts: 1,
    body: { destination } satisfies DeliveryMessage,
  }));
  const batch = createMessageBatch<DeliveryMessage>('ecpds-deliveries', messages);
  const ctx = createExecutionContext();
  await worker.queue(batch, workerEnv, ctx);
  return getQueueResult(batch, ctx);
}

const s3 = new AwsClient({ accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', service: 's3', region: 'us-east-1' });
async function s3Object(key: string) {
  const r = await s3.fetch(`${s3Url}/test-bucket/${key}`);
  return r.status === 200 ? new Uint8Array(await r.arrayBuffer()) : null;
}
const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');

describe('the cron', () => {
  it('queues the due destinations whose current host the edge reaches, and no other', async () => {
    const toS3 = await destination('S3Q', [s3Host()]);
    const toR2 = await destination('R2Q', [{ method: 'r2', data: 'r2.binding = "ECPDS_R2"' }]);
    const toSftp = await destination('SFTPQ', [{ method: 'sftp', host: 'sftp.example.org' }]);
    const onLan = await destination('LANQ', [s3Host({ networkName: 'LAN', networkCode: 'L' })]);
    const plainHttp = await destination('HTTPQ', [{ method: 'http', host: 'upload.example.org' }]);
    // Started, reachable, but with nothing due.
    await destination('IDLEQ', [s3Host()]);
    for (const name of [toS3, toR2, toSftp, onLan, plainHttp]) await put(name, 10);

    const mine = (sent: string[]) => sent.filter((n) => n.startsWith(`E${stamp}`) && n.endsWith('Q')).sort();
    expect(mine(await cron())).toEqual([toR2, toS3].sort());
    // Off by default: a deployed Worker never reaches the loopback S3 server. (The Worker keeps the
    // settings of its first request for the isolate's life: this one is built apart.)
    const deployed = workerConfig({ ...workerEnv, ECPDS_EDGE_ALLOW_PRIVATE: undefined });
    const queue = recordingQueue();
    await withPorts((ports) => dispatchDue(ports, deployed, queue));
    expect(mine(queue.sent)).toEqual([toR2]);
  });

  it('queues a destination whose only due transfer has an R2 source', async () => {
    const name = await destination('R2SRCQ', [s3Host()]);
    await putR2(name, 10);
    expect((await cron()).filter((n) => n === name)).toEqual([name]);
  });
});

describe('the queue consumer', () => {
  it('delivers to S3 through the s3 method: DONE, history WAIT EXEC DONE, MD5 kept, the object whole', async () => {
    const name = await destination('S3', [s3Host()]);
    const files = [await put(name, 300_000), await put(name, 0), await put(name, 70_000)];
    const result = await consume([name]);
    expect(result.explicitAcks).toHaveLength(0);
    expect(result.ackAll).toBe(true);
    for (const f of files) {
      const t = await transfer(f.transferId);
      expect([t.status, t.message]).toEqual(['DONE', null]);
      expect(await history(f.transferId)).toEqual(['WAIT', 'EXEC', 'DONE']);
      const object = await s3Object(`${name.toLowerCase()}/${f.target}`);
      expect(object && md5(object)).toBe(f.md5);
    }
  });

  it('delivers to a bound R2 bucket with a known length, and the MD5 checked against its ETag', async () => {
    const name = await destination('R2', [{ method: 'r2', data: 'r2.binding = "ECPDS_R2"' }]);
    const f = await put(name, 1_200_000);
    await consume([name]);
    expect((await transfer(f.transferId)).status).toBe('DONE');
    const object = await bucket.get(`${name.toLowerCase()}/${f.target}`);
    expect(object).not.toBeNull();
    expect(md5(new Uint8Array(await object!.arrayBuffer()))).toBe(f.md5);
  });

  it('delivers files whose source is an R2 object, to R2 and to S3, the bytes the same', async () => {
    const toR2 = await destination('R2SRC', [{ method: 'r2', data: 'r2.binding = "ECPDS_R2"' }]);
    const toS3 = await destination('S3SRC', [s3Host()]);
    const viaR2 = await putR2(toR2, 1_500_000);
    const viaS3 = await putR2(toS3, 300_000);
    await consume([toR2, toS3]);
    for (const f of [viaR2, viaS3]) {
      expect(await history(f.transferId)).toEqual(['WAIT', 'EXEC', 'DONE']);
    }
    const object = await bucket.get(`${toR2.toLowerCase()}/${viaR2.target}`);
    expect(object && md5(new Uint8Array(await object.arrayBuffer()))).toBe(viaR2.md5);
    const s3Copy = await s3Object(`${toS3.toLowerCase()}/${viaS3.target}`);
    expect(s3Copy && md5(s3Copy)).toBe(viaS3.md5);
  });

  it('fails the attempt of an R2 source that is gone or changed size since it was registered, saying so', async () => {
    const [goneTo, changedTo] = [await destination('R2GONE', [s3Host()]), await destination('R2CHG', [s3Host()])];
    const gone = await putR2(goneTo, 100);
    const changed = await putR2(changedTo, 100);
    await sourceBucket().delete(gone.key);
    await sourceBucket().put(changed.key, new Uint8Array(104));
    await consume([goneTo, changedTo]);
    const messages = [await transfer(gone.transferId), await transfer(changed.transferId)].map((t) => [
      t.status,
      t.message,
    ]);
    expect(messages).toEqual([
      ['RETR', `Source r2://ECPDS_SOURCES/${gone.key} could not be read: no such object`],
      ['RETR', 'Source changed size: 104 bytes now, 100 registered'],
    ]);
  });

  it('an unbound R2 binding fails the attempt with a message that says so', async () => {
    const name = await destination('R2X', [{ method: 'r2', data: 'r2.binding = "NO_SUCH_BUCKET"' }]);
    const f = await put(name, 10);
    await consume([name]);
    const t = await transfer(f.transferId);
    expect([t.status, t.message]).toEqual(['RETR', 'R2 binding NO_SUCH_BUCKET is not bound to this Worker']);
    expect(await history(f.transferId)).toEqual(['WAIT', 'EXEC', 'STOP', 'RETR']);
  });

  it('a duplicate message is harmless: each transfer is claimed and delivered once', async () => {
    const name = await destination('DUP', [s3Host()]);
    const files = await Promise.all([1, 2, 3, 4, 5].map(() => put(name, 20_000)));
    await Promise.all([consume([name, name]), consume([name])]);
    for (const f of files) {
      expect(await history(f.transferId)).toEqual(['WAIT', 'EXEC', 'DONE']);
    }
  });

  it('never claims for a host it cannot reach, nor a transfer whose source is a local path', async () => {
    const sftp = await destination('SFTP', [{ method: 'sftp', host: 'sftp.example.org' }]);
    const viaSftp = await put(sftp, 10);
    const name = await destination('LOC', [s3Host()]);
    // Registered by a Node instance (local sources are refused at the Worker): written directly.
    const local = await withPorts(async (ports) => {
      const now = ports.clock();
      const file = {
        source: '/data/local/fc.grib',
        size: 10,
        registeredBy: 'node',
        comment: 'Registered by node',
        retrieve: false,
      };
      const id = await ports.repos.dataFiles.register(file, {
        destination: name,
        target: 'local.bin',
        uniqueName: '',
        priority: 99,
        status: 'WAIT',
        standby: false,
        scheduledAt: now,
        expiresAt: new Date(now.getTime() + 3_600_000),
        metadata: [],
      });
      return transferOf(id as number);
    });
    const remote = await put(name, 10);
    await consume([sftp, name]);
    expect((await transfer(viaSftp.transferId)).status).toBe('WAIT');
    expect(await history(viaSftp.transferId)).toEqual(['WAIT']);
    expect((await transfer(local.id)).status).toBe('WAIT');
    expect((await transfer(remote.transferId)).status).toBe('DONE');
  });

  it('a failure at S3 requeues the transfer with the reason, as a Node mover does', async () => {
    const name = await destination('BAD', [s3Host({ passwd: 'wrong' })]);
    const f = await put(name, 10);
    await consume([name]);
    const t = await transfer(f.transferId);
    expect(t.status).toBe('RETR');
    expect(t.message).toMatch(/S3 PUT test-bucket\/.*failed: 403 SignatureDoesNotMatch/);
    expect(await history(f.transferId)).toEqual(['WAIT', 'EXEC', 'STOP', 'RETR']);
  });
});

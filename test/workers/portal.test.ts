import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { exports } from 'cloudflare:workers';
import { createHash } from 'node:crypto';
import { AwsV4Signer } from 'aws4fetch';
import { eq } from 'drizzle-orm';
import { afterEach, beforeAll, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import { openPostgres } from '../../db/client.ts';
import { dataFiles } from '../../db/schema.ts';
import { destinationBackup } from '../support/backups.ts';
import { call, client, sourceBucket, sourcePort, withPorts, worker, workerEnv } from './support.ts';

/**
 * The data portal on the Worker, inside workerd: an incoming user logs in with Basic, lists its
 * destinations and downloads files whose source is an http URL (the suite's source server on the
 * loopback interface) or an object of an R2 bucket (Miniflare's), as download tools expect; the
 * INH and DEA lines go to the console.
 */
const stamp = Date.now().toString(36).toUpperCase();
const DEST = `P${stamp}`;
const OTHER = `P${stamp}B`;
const USER = `wportal_${stamp.toLowerCase()}`;
const PASSWORD = `${USER}-Pass-1`;
const basic = (user: string, password: string) => `Basic ${btoa(`${user}:${password}`)}`;
const AUTH = basic(USER, PASSWORD);
let admin: string;
let hostids = 80_000 + Math.floor(Math.random() * 9000);
let addresses = 0;
/** The Worker's entry as the runtime calls it (`wrangler types` would type it; this suite has no generated types). */
const entry = (exports as unknown as { default: Fetcher }).default;

/** The bytes of the source server's blob `seed` of `size` bytes (see global-setup.ts). */
const blobBytes = (seed: number, size: number) => new Uint8Array(size).map((_, i) => (31 * i + seed) & 255);
const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');

/** Files of DEST: one whose source honours Range, one whose source answers the whole file to any request. */
const RANGED = { target: 'fc/ranged.bin', seed: 41, size: 300_000, ranged: true };
const WHOLE = { target: 'whole.bin', seed: 42, size: 100_000, ranged: false };
/** Big enough that one read of the answer never holds all of it. */
const LONG = { target: 'long.bin', seed: 43, size: 16_000_000, ranged: true };

async function destination(name: string) {
  const body = destinationBackup(name, [{ method: 'portal' }], { nextHostId: () => ++hostids });
  const r = await call('PUT', '/v1/destination/backup', { auth: admin, body });
  expect(r.status, r.text).toBe(200);
}

async function incomingUser(id: string, password: string, destinations: string[]) {
  const query = new URLSearchParams({ id, email: `${id}@example.org`, iso: 'gb', pass: password, active: 'true' });
  const add = await call('POST', `/v1/incoming/user/add?${query}`, { auth: admin });
  expect(add.status, add.text).toBe(200);
  for (const name of destinations) {
    const r = await call('POST', `/v1/incoming/association/add?id=${id}&destination=${name}`, { auth: admin });
    expect(r.status, r.text).toBe(200);
  }
}

/** Registers a file through the Worker's datafile/put, its source a blob of the source server. */
async function putFile(name: string, file: typeof RANGED) {
  const source = `http://${sourcePort()}/${file.ranged ? 'ranged/' : ''}blob/${file.seed}/${file.size}`;
  const q = new URLSearchParams({ destination: name, source, target: file.target });
  const r = await call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  return r.json.id as number;
}

beforeAll(async () => {
  admin = await client(`wportal_admin_${stamp.toLowerCase()}`, ['.*']);
  await destination(DEST);
  await destination(OTHER);
  await incomingUser(USER, PASSWORD, [DEST, OTHER]);
  const ranged = await putFile(DEST, RANGED);
  await putFile(DEST, WHOLE);
  // The MD5 a delivery records; the ETag of the file it belongs to.
  const handle = openPostgres(workerEnv.HYPERDRIVE.connectionString, { perRequest: true });
  try {
    await handle.db
      .update(dataFiles)
      .set({ checksum: md5(blobBytes(RANGED.seed, RANGED.size)) })
      .where(eq(dataFiles.id, ranged));
  } finally {
    await handle.close();
  }
});

let consoleLog: MockInstance<typeof console.log>;
// The Worker's event lines are console lines: watched as they are written, still written.
beforeEach(() => {
  consoleLog = vi.spyOn(console, 'log');
});
afterEach(() => consoleLog.mockRestore());

/** The event lines of a kind (INH, DEA) the Worker wrote during this test, as their fields. */
function eventLines(kind: string): Record<string, string>[] {
  return consoleLog.mock.calls
    .map(([line]) => String(line))
    .filter((line) => line.startsWith(`${kind};`))
    .map((line) =>
      Object.fromEntries(
        line
          .split(';')
          .slice(1)
          .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
      ),
    );
}

interface Answer {
  status: number;
  headers: Headers;
  bytes: Uint8Array;
  text: string;
}

/** One request of the portal through the Worker's fetch handler, its body read, its waitUntil work done. */
async function portal(
  method: string,
  path: string,
  options: { auth?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { 'cf-connecting-ip': `10.9.0.${++addresses % 250}`, ...options.headers };
  if (options.auth) headers.authorization = options.auth;
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request(`https://edge.test${path}`, { method, headers, body: options.body }),
    workerEnv,
    ctx,
  );
  const bytes = new Uint8Array(await res.arrayBuffer());
  await waitOnExecutionContext(ctx);
  return { status: res.status, headers: res.headers, bytes, text: new TextDecoder().decode(bytes) };
}

describe('the data portal on the Worker', () => {
  it('lets a user in with Basic and lists its destinations as HTML links and as JSON', async () => {
    const html = await portal('GET', '/portal/data/', { auth: AUTH });
    expect(html.status, html.text).toBe(200);
    expect(html.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html.text).toContain(`<a href="${DEST}/">`);
    expect(html.text).toContain(`<a href="${OTHER}/">`);

    const json = await portal('GET', '/portal/data/', { auth: AUTH, headers: { accept: 'application/json' } });
    expect(json.status).toBe(200);
    expect(JSON.parse(json.text).map((e: { name: string; type: string }) => [e.name, e.type])).toEqual([
      [DEST, 'directory'],
      [OTHER, 'directory'],
    ]);
    // The login is recorded (lastLoginDate, shown by the API).
    const users = await call('GET', '/v1/incoming/user/list', { auth: admin });
    expect(users.json.userList.find((u: { id: string }) => u.id === USER).lastLoginDate).toBeTruthy();
  });

  it("lists a destination's files in JSON: directories by their targets' '/', sizes and times", async () => {
    const top = await portal('GET', `/portal/data/${DEST}/`, { auth: AUTH, headers: { accept: 'application/json' } });
    expect(top.status, top.text).toBe(200);
    const entries = JSON.parse(top.text);
    expect(entries.map((e: { name: string; type: string }) => [e.name, e.type])).toEqual([
      ['fc', 'directory'],
      ['whole.bin', 'file'],
    ]);
    expect(entries[1].size).toBe(WHOLE.size);
    expect(Date.parse(entries[1].lastModified)).not.toBeNaN();
    const below = await portal('GET', `/portal/data/${DEST}/fc/`, {
      auth: AUTH,
      headers: { accept: 'application/json' },
    });
    expect(JSON.parse(below.text)).toMatchObject([{ name: 'ranged.bin', type: 'file', size: RANGED.size }]);
    const empty = await portal('GET', `/portal/data/${OTHER}/`, {
      auth: AUTH,
      headers: { accept: 'application/json' },
    });
    expect(JSON.parse(empty.text)).toEqual([]);
  });

  it('downloads a whole file from its http source: length, validators, the bytes, and the INH line', async () => {
    const r = await portal('GET', `/portal/data/${DEST}/fc/ranged.bin`, { auth: AUTH });
    expect(r.status, r.text).toBe(200);
    const bytes = blobBytes(RANGED.seed, RANGED.size);
    expect(r.headers.get('content-length')).toBe(String(RANGED.size));
    expect(r.headers.get('etag')).toBe(`"${md5(bytes)}"`);
    expect(r.headers.get('accept-ranges')).toBe('bytes');
    expect(r.headers.get('content-range')).toBeNull();
    expect(md5(r.bytes)).toBe(md5(bytes));
    expect(eventLines('INH')).toMatchObject([
      {
        DestinationName: DEST,
        FileName: RANGED.target,
        FileSize: String(RANGED.size),
        BytesSent: String(RANGED.size),
        UserId: USER,
        CountryCode: 'gb',
        TransferProtocol: 'https',
        TransferServer: 'edge',
        Action: 'download',
      },
    ]);
    const traffic = await withPorts((ports) => ports.repos.portal.trafficSince(USER, new Date(Date.now() - 600_000)));
    expect(traffic.downloadBytes).toBeGreaterThanOrEqual(RANGED.size);
  });

  it('answers a Range with 206 and its Content-Range, from a source that honours Range or not', async () => {
    for (const file of [RANGED, WHOLE]) {
      const r = await portal('GET', `/portal/data/${DEST}/${file.target}`, {
        auth: AUTH,
        headers: { range: 'bytes=1000-1999' },
      });
      expect(r.status, r.text).toBe(206);
      expect(r.headers.get('content-range')).toBe(`bytes 1000-1999/${file.size}`);
      expect(r.headers.get('content-length')).toBe('1000');
      expect(r.bytes).toEqual(blobBytes(file.seed, file.size).subarray(1000, 2000));
    }
    expect(eventLines('INH').map((l) => [l.FileName, l.BytesSent])).toEqual([
      [RANGED.target, '1000'],
      [WHOLE.target, '1000'],
    ]);
    const past = await portal('GET', `/portal/data/${DEST}/${WHOLE.target}`, {
      auth: AUTH,
      headers: { range: `bytes=${WHOLE.size}-` },
    });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${WHOLE.size}`);
  });

  it('answers HEAD with the headers of a GET and no body, and writes no INH line', async () => {
    const r = await portal('HEAD', `/portal/data/${DEST}/fc/ranged.bin`, { auth: AUTH });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-length')).toBe(String(RANGED.size));
    expect(r.headers.get('etag')).toMatch(/^"[0-9a-f]{32}"$/);
    expect(Date.parse(r.headers.get('last-modified')!)).not.toBeNaN();
    expect(r.bytes).toHaveLength(0);
    expect(eventLines('INH')).toEqual([]);
  });

  it('answers 304 to If-None-Match with the ETag and to If-Modified-Since, and sends the file otherwise', async () => {
    const head = await portal('HEAD', `/portal/data/${DEST}/fc/ranged.bin`, { auth: AUTH });
    const etag = head.headers.get('etag')!;
    const same = await portal('GET', `/portal/data/${DEST}/fc/ranged.bin`, {
      auth: AUTH,
      headers: { 'if-none-match': `"other", ${etag}` },
    });
    expect(same.status).toBe(304);
    expect(same.headers.get('etag')).toBe(etag);
    expect(same.bytes).toHaveLength(0);
    const unmodified = await portal('GET', `/portal/data/${DEST}/${WHOLE.target}`, {
      auth: AUTH,
      headers: { 'if-modified-since': new Date(Date.now() + 60_000).toUTCString() },
    });
    expect(unmodified.status).toBe(304);
    expect(eventLines('INH')).toEqual([]);
    const changed = await portal('GET', `/portal/data/${DEST}/fc/ranged.bin`, {
      auth: AUTH,
      headers: { 'if-none-match': '"0123456789abcdef0123456789abcdef"' },
    });
    expect(changed.status).toBe(200);
    expect(changed.bytes).toHaveLength(RANGED.size);
  });

  it('refuses a wrong password with 401 Login failed and the realm, and writes the DEA line', async () => {
    const r = await portal('GET', `/portal/data/${DEST}/`, { auth: basic(USER, 'not-the-password') });
    expect(r.status).toBe(401);
    expect(r.text).toBe('Login failed');
    expect(r.headers.get('www-authenticate')).toBe('Basic realm="Data Portal"');
    expect(eventLines('DEA')).toMatchObject([{ UserId: USER, Context: expect.stringMatching(/^https:10\.9\.0\./) }]);
    const nobody = await portal('GET', '/portal/data/', { headers: { accept: 'application/json' } });
    expect([nobody.status, nobody.text]).toEqual([401, 'Login failed']);
  });

  it('keeps a user out of a destination not its own, and answers uploads that this server keeps none', async () => {
    const name = `P${stamp}X`;
    await destination(name);
    expect((await portal('GET', `/portal/data/${name}/`, { auth: AUTH })).status).toBe(404);
    await withPorts((ports) => ports.repos.portal.grant(USER, ['put']));
    const put = await portal('PUT', `/portal/data/${DEST}/new.bin`, { auth: AUTH, body: 'some bytes' });
    expect([put.status, put.text]).toEqual([501, 'Uploads are not available on this server']);
    const list = await portal('GET', `/portal/data/${DEST}/`, { auth: AUTH, headers: { accept: 'application/json' } });
    expect(JSON.parse(list.text).map((e: { name: string }) => e.name)).not.toContain('new.bin');
  });
  it('answers 502 for a file whose source is a local path, which only a Node server reads', async () => {
    // Registered by a Node instance (the Worker refuses local sources): written directly.
    await withPorts(async (ports) => {
      const now = ports.clock();
      const file = {
        source: '/data/local/fc.grib',
        size: 10,
        registeredBy: 'node',
        comment: 'Registered by node',
        retrieve: false,
      };
      await ports.repos.dataFiles.register(file, {
        destination: DEST,
        target: 'local.bin',
        uniqueName: '',
        priority: 99,
        status: 'WAIT',
        standby: false,
        scheduledAt: now,
        expiresAt: new Date(now.getTime() + 3_600_000),
        metadata: [],
      });
    });
    const r = await portal('GET', `/portal/data/${DEST}/local.bin`, { auth: AUTH });
    expect([r.status, r.text]).toEqual([502, 'local.bin cannot be downloaded now: its data is not available']);
    expect(eventLines('INH')).toEqual([]);
    expect(await withPorts((ports) => ports.repos.portal.connections(USER, new Date()))).toBe(0);
  });
});

describe('files whose source is an object of an R2 bucket', () => {
  const R2DEST = `P${stamp}R`;
  const R2USER = `wportal_r2_${stamp.toLowerCase()}`;
  const R2AUTH = basic(R2USER, `${R2USER}-Pass-1`);
  const FILE = { target: 'r2/fc.bin', seed: 51, size: 250_000 };
  const key = (name: string) => `portal/${stamp}/${name}`;

  /** An object of the source bucket, registered through the Worker's datafile/put as `target`. */
  async function putObject(target: string, bytes: Uint8Array) {
    await sourceBucket().put(key(target), bytes);
    const q = new URLSearchParams({ destination: R2DEST, source: `r2://ECPDS_SOURCES/${key(target)}`, target });
    const r = await call('GET', `/v1/datafile/put?${q}`, { auth: admin });
    expect(r.status, r.text).toBe(200);
  }

  beforeAll(async () => {
    await destination(R2DEST);
    await incomingUser(R2USER, `${R2USER}-Pass-1`, [R2DEST]);
    await putObject(FILE.target, blobBytes(FILE.seed, FILE.size));
  });

  it('lists it with its size', async () => {
    const r = await portal('GET', `/portal/data/${R2DEST}/r2/`, {
      auth: R2AUTH,
      headers: { accept: 'application/json' },
    });
    expect(r.status, r.text).toBe(200);
    expect(JSON.parse(r.text)).toMatchObject([{ name: 'fc.bin', type: 'file', size: FILE.size }]);
  });

  it('downloads it whole, a range of it with 206 and its Content-Range, and answers HEAD', async () => {
    const bytes = blobBytes(FILE.seed, FILE.size);
    const whole = await portal('GET', `/portal/data/${R2DEST}/${FILE.target}`, { auth: R2AUTH });
    expect(whole.status, whole.text).toBe(200);
    expect(whole.headers.get('content-length')).toBe(String(FILE.size));
    expect(md5(whole.bytes)).toBe(md5(bytes));

    const ranged = await portal('GET', `/portal/data/${R2DEST}/${FILE.target}`, {
      auth: R2AUTH,
      headers: { range: 'bytes=100000-149999' },
    });
    expect(ranged.status, ranged.text).toBe(206);
    expect(ranged.headers.get('content-range')).toBe(`bytes 100000-149999/${FILE.size}`);
    expect(ranged.bytes).toEqual(bytes.subarray(100_000, 150_000));
    const tail = await portal('GET', `/portal/data/${R2DEST}/${FILE.target}`, {
      auth: R2AUTH,
      headers: { range: 'bytes=-10' },
    });
    expect([tail.status, tail.headers.get('content-range')]).toEqual([
      206,
      `bytes ${FILE.size - 10}-${FILE.size - 1}/${FILE.size}`,
    ]);
    expect(tail.bytes).toEqual(bytes.subarray(FILE.size - 10));
    expect(eventLines('INH').map((l) => [l.FileName, l.BytesSent])).toEqual([
      [FILE.target, String(FILE.size)],
      [FILE.target, '50000'],
      [FILE.target, '10'],
    ]);

    const head = await portal('HEAD', `/portal/data/${R2DEST}/${FILE.target}`, { auth: R2AUTH });
    expect([head.status, head.headers.get('content-length'), head.bytes.length]).toEqual([200, String(FILE.size), 0]);
  });

  it('answers 502 once the object changed size since it was registered, grown or shrunk below a range', async () => {
    await putObject('grown.bin', new Uint8Array(1000).fill(1));
    await putObject('shrunk.bin', new Uint8Array(1000).fill(2));
    await sourceBucket().put(key('grown.bin'), new Uint8Array(1004).fill(1));
    await sourceBucket().put(key('shrunk.bin'), new Uint8Array(100).fill(2));
    const grown = await portal('GET', `/portal/data/${R2DEST}/grown.bin`, { auth: R2AUTH });
    expect([grown.status, grown.text]).toEqual([
      502,
      'grown.bin cannot be downloaded now: its data changed since it was registered',
    ]);
    const shrunk = await portal('GET', `/portal/data/${R2DEST}/shrunk.bin`, {
      auth: R2AUTH,
      headers: { range: 'bytes=500-599' },
    });
    expect([shrunk.status, shrunk.text]).toEqual([
      502,
      'shrunk.bin cannot be downloaded now: its data changed since it was registered',
    ]);
    await sourceBucket().delete(key('grown.bin'));
    const gone = await portal('GET', `/portal/data/${R2DEST}/grown.bin`, { auth: R2AUTH });
    expect([gone.status, gone.text]).toEqual([502, 'grown.bin cannot be downloaded now: its data is not available']);
    expect(eventLines('INH')).toEqual([]);
    expect(await withPorts((ports) => ports.repos.portal.connections(R2USER, new Date()))).toBe(0);
  });
});

describe('downloads through the runtime', () => {
  const get = (path: string, headers: Record<string, string>) =>
    entry.fetch(new Request(`https://edge.test/portal/data/${DEST}/${path}`, { headers }));

  it('sends a whole file with its length, as a client receives it', async () => {
    const res = await get(RANGED.target, { authorization: AUTH, 'cf-connecting-ip': '10.9.1.2' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(RANGED.size));
    expect(md5(new Uint8Array(await res.arrayBuffer()))).toBe(md5(blobBytes(RANGED.seed, RANGED.size)));
    expect(eventLines('INH')).toMatchObject([{ FileName: RANGED.target, BytesSent: String(RANGED.size) }]);
  });

  it('holds the connection while it is read (its lease renewed), and ends it when nothing reads any more', async () => {
    const user = `wportal_long_${stamp.toLowerCase()}`;
    const password = `${user}-Pass-1`;
    await incomingUser(user, password, [DEST]);
    await withPorts((ports) => ports.repos.portal.setOption(user, 'portal.maxConnections', '1'));
    await putFile(DEST, LONG);
    const connections = (at: Date) => withPorts((ports) => ports.repos.portal.connections(user, at));
    const headers = { authorization: basic(user, password), 'cf-connecting-ip': '10.9.1.1' };
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    const startedAt = new Date();
    const res = await get(LONG.target, headers);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let received = (await reader.read()).value!.byteLength;
    expect(received).toBeLessThan(LONG.size);
    expect(await connections(new Date())).toBe(1);
    // A second download is over the user's limit while this one runs.
    const second = await get(LONG.target, headers);
    expect([second.status, await second.text()]).toEqual([429, 'Login failed']);

    // The connection's lease (60 s from the start) is renewed while the body is read, a little at a
    // time: a moment past the first lease still counts it once the renewal (a third of the lease in) is done.
    const pastFirstLease = new Date(startedAt.getTime() + 65_000);
    expect(await connections(pastFirstLease)).toBe(0);
    for (let waited = 0; waited < 40 && (await connections(pastFirstLease)) === 0; waited++) {
      await sleep(1000);
      received += (await reader.read()).value!.byteLength;
    }
    expect(await connections(pastFirstLease)).toBe(1);

    // Nothing reads any more, and nothing cancels (as when workerd drops a gone client's body): the
    // download ends once it is taken as abandoned, with the bytes that went out.
    for (let waited = 0; waited < 60 && (await connections(new Date())) > 0; waited++) await sleep(1000);
    expect(await connections(new Date())).toBe(0);
    const [line] = eventLines('INH');
    expect(line).toMatchObject({ FileName: LONG.target, UserId: user });
    expect(Number(line!.BytesSent)).toBeGreaterThanOrEqual(received);
    expect(Number(line!.BytesSent)).toBeLessThan(LONG.size);
    await reader.cancel().catch(() => undefined);
  }, 150_000);
});

describe('the S3 endpoint on the Worker', () => {
  /** The files below a directory of the tree, by their paths under the destination, through the JSON listings. */
  async function filesUnder(dir: string, prefix = ''): Promise<string[]> {
    const r = await portal('GET', `/portal/data/${dir}`, { auth: AUTH, headers: { accept: 'application/json' } });
    const entries = JSON.parse(r.text) as { name: string; type: string }[];
    const paths: string[] = [];
    for (const e of entries) {
      if (e.type === 'file') paths.push(`${prefix}${e.name}`);
      else paths.push(...(await filesUnder(`${dir}${e.name}/`, `${prefix}${e.name}/`)));
    }
    return paths.sort();
  }

  /** A request signed as an SDK signs it (aws4fetch), through the Worker's fetch handler. */
  async function s3(path: string, headers: Record<string, string> = {}) {
    const signer = new AwsV4Signer({
      url: `https://edge.test/portal/s3/${path}`,
      accessKeyId: USER,
      secretAccessKey: PASSWORD,
      service: 's3',
      region: 'us-east-1',
      headers,
    });
    const signed = await signer.sign();
    return portal('GET', `/portal/s3/${path}`, { headers: Object.fromEntries(signed.headers) });
  }

  it('lists a bucket and serves a range of an object, counted under the protocol s3', async () => {
    const listed = await s3(`${DEST}?list-type=2`);
    expect(listed.status, listed.text).toBe(200);
    // Every file of the destination's tree, as its HTTPS listings show them, in byte order.
    const keys = [...listed.text.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1]);
    expect(keys).toEqual(await filesUnder(`${DEST}/`));
    expect(keys).toEqual(expect.arrayContaining([RANGED.target, WHOLE.target]));
    const part = await s3(`${DEST}/${RANGED.target}`, { range: 'bytes=1000-1999' });
    expect(part.status, part.text).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 1000-1999/${RANGED.size}`);
    expect(part.bytes).toEqual(blobBytes(RANGED.seed, RANGED.size).subarray(1000, 2000));
    expect(eventLines('INH').at(-1)).toMatchObject({ FileName: RANGED.target, TransferProtocol: 's3' });
    const wrong = await portal('GET', `/portal/s3/${DEST}/${RANGED.target}`, {
      headers: { authorization: `AWS4-HMAC-SHA256 Credential=${USER}/20260101/us-east-1/s3/aws4_request` },
    });
    expect(wrong.status).toBe(400);
  });
});

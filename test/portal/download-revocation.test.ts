import https from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic } from '../support/harness.ts';
import { Agent } from './agent.ts';
import { signed } from './s3/support.ts';
import { bytesOf, incomingUser, md5, type PortalScene, portalScene, putFile } from './support.ts';

/**
 * A download under way over HTTPS (Basic credentials, a browser session) or S3 whose user loses
 * access while its body goes: the body is cut (a failed connection, not an end), far short of the
 * file; one whose user is unchanged goes whole.
 */
let s: PortalScene;
const SIZE = 48 * 1024 * 1024;
const FILE = bytesOf(SIZE, 91);
const USERS = ['whole', 'disabled', 'unassociated', 'browser', 's3off', 's3gone'];

beforeAll(async () => {
  s = await portalScene({ portalPages: true });
  const { h, admin } = s;
  await h.addDestination('BIG');
  for (const id of USERS) await incomingUser(h, admin, { id, password: `${id}-Pass-1` }, ['BIG']);
  await putFile(h, admin, s.sources, 'BIG', 'large.bin', FILE);
}, 120_000);
afterAll(() => s?.close());

interface Received {
  bytes: Buffer;
  /** Whether the body ended as a whole answer (false: the connection was cut). */
  complete: boolean;
  status: number;
}

/**
 * A GET read slowly: a little at a time with pauses, and `meanwhile` run once the first MiB is in
 * (the client not reading meanwhile); then the rest read as it comes.
 */
function slowGet(url: string, headers: Record<string, string>, meanwhile: () => Promise<void>) {
  const server = new URL(s.url);
  const target = new URL(url);
  return new Promise<Received>((resolve, reject) => {
    const request = https.request(
      {
        host: server.hostname,
        port: server.port,
        path: target.pathname + target.search,
        headers: { ...headers, host: target.host },
        rejectUnauthorized: false,
        agent: false,
      },
      (res) => {
        const parts: Buffer[] = [];
        let length = 0;
        let changed = false;
        res.on('data', (b: Buffer) => {
          parts.push(b);
          length += b.length;
          res.pause();
          if (!changed && length >= 1024 * 1024) {
            changed = true;
            meanwhile().then(() => res.resume(), reject);
          } else {
            setTimeout(() => res.resume(), 2);
          }
        });
        const done = () =>
          resolve({
            bytes: Buffer.concat(parts),
            complete: res.complete,
            status: res.statusCode!,
          });
        res.on('end', done);
        res.on('aborted', done);
        res.on('error', done);
      },
    );
    request.on('error', reject);
    request.end();
  });
}

const api = async (method: string, path: string) => {
  const r = await s.h.call(method, path, { auth: s.admin });
  expect(r.status, r.text).toBe(200);
};
const disable = (id: string) => api('DELETE', `/v1/incoming/user/del/${id}`);
const unassociate = (id: string) => api('DELETE', `/v1/incoming/association/del?id=${id}&destination=BIG`);
const nothing = async () => {};

const httpsGet = (user: string, meanwhile: () => Promise<void>) =>
  slowGet(`${s.url}/portal/data/BIG/large.bin`, { authorization: basic(user, `${user}-Pass-1`) }, meanwhile);

async function s3Get(user: string, meanwhile: () => Promise<void>) {
  const request = await signed('https://localhost/portal/s3/BIG/large.bin', {
    accessKeyId: user,
    secretAccessKey: `${user}-Pass-1`,
  });
  return slowGet(request.url.toString(), Object.fromEntries(request.headers), meanwhile);
}

/** Cut: fewer bytes than a quarter of the file, each of them the file's own, and no whole answer. */
function expectCut(received: Received) {
  expect(received.status).toBe(200);
  expect(received.complete).toBe(false);
  expect(received.bytes.length).toBeLessThan(SIZE / 4);
  expect(received.bytes.equals(FILE.subarray(0, received.bytes.length))).toBe(true);
}

describe('an HTTPS download under way', () => {
  it('goes whole, byte for byte, while its user is unchanged', async () => {
    const received = await httpsGet('whole', nothing);
    expect(received.complete).toBe(true);
    expect(received.bytes.length).toBe(SIZE);
    expect(md5(received.bytes)).toBe(md5(FILE));
  });

  it('is cut once its user is disabled', async () => {
    expectCut(await httpsGet('disabled', () => disable('disabled')));
  });

  it('is cut once its user loses the destination', async () => {
    expectCut(await httpsGet('unassociated', () => unassociate('unassociated')));
  });

  it('of a browser session is cut once its user loses the destination', async () => {
    const agent = new Agent(s.h.app);
    const page = await agent.login('browser', 'browser-Pass-1');
    expect(page.status).toBe(303);
    const cookie = `ecpds_portal=${agent.jar.get('ecpds_portal')}`;
    expectCut(await slowGet(`${s.url}/portal/data/BIG/large.bin`, { cookie }, () => unassociate('browser')));
  });
});

describe('an S3 GET under way', () => {
  it('goes whole while its user is unchanged', async () => {
    const received = await s3Get('whole', nothing);
    expect(received.complete).toBe(true);
    expect(md5(received.bytes)).toBe(md5(FILE));
  });

  it('is cut once its user is disabled', async () => {
    expectCut(await s3Get('s3off', () => disable('s3off')));
  });

  it('is cut once its user loses the destination', async () => {
    expectCut(await s3Get('s3gone', () => unassociate('s3gone')));
  });
});

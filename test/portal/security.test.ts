import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Base64 } from '../../core/common/crypto.ts';
import { dataTransfers } from '../../db/schema.ts';
import { basic, type Harness } from '../support/harness.ts';
import { scaled } from '../support/time.ts';
import { needs } from '../support/tools.ts';
import {
  bytesOf,
  eventFields,
  eventLines,
  incomingUser,
  md5,
  type PortalScene,
  portalScene,
  putFile,
  tool,
} from './support.ts';

/**
 * Who gets what from the portal: nothing outside the tree, nothing of another user's destination,
 * one answer for every refused login (its reason in the DEA line only).
 */
let s: PortalScene;
let h: Harness;
const secret = bytesOf(4000, 99);

beforeAll(async () => {
  s = await portalScene({ failedAuth: { failedAuthRules: { refusePairAt: 3 }, sleep: async () => {} } });
  h = s.h;
  const { admin } = s;
  for (const d of ['DEST', 'OTHER']) await h.addDestination(d);
  await incomingUser(h, admin, { id: 'alice', password: 'Secret-1' }, ['DEST']);
  await incomingUser(h, admin, { id: 'bob', password: 'Secret-2' }, ['OTHER']);
  await incomingUser(h, admin, { id: 'carol', password: 'Secret-3', active: false }, ['DEST']);
  await incomingUser(h, admin, { id: 'selfie', password: 'Own-pass-1', mode: 'self-service' }, ['DEST']);
  await incomingUser(h, admin, { id: 'opener', mode: 'open-access' }, ['DEST']);
  await incomingUser(h, admin, { id: 'lonely', password: 'Secret-4' }, []);
  const at = new Date();
  const subscriber = await h.ports.repos.portal.addSubscriber(
    { userId: 'selfie', name: 'Sub', email: 'sub@example.org', iso: 'gb', tokenHash: 't', tokenExpiresAt: at },
    at,
  );
  await h.ports.repos.portal.changeSubscriber(subscriber!, ['unverified'], {
    status: 'active',
    at,
    passwordHash: sha256Base64('Sub-pass-1'),
    clearToken: true,
  });
  await putFile(h, admin, s.sources, 'DEST', 'a.txt', bytesOf(100, 1));
  await putFile(h, admin, s.sources, 'OTHER', 'secret.bin', secret);
  const deleted = await putFile(h, admin, s.sources, 'DEST', 'deleted.bin', bytesOf(100, 2));
  expect((await h.call('DELETE', `/v1/datafile/del?id=${deleted.id}`, { auth: admin })).status).toBe(200);
  const expired = await putFile(h, admin, s.sources, 'DEST', 'expired.bin', bytesOf(100, 3));
  await h.db
    .update(dataTransfers)
    .set({ expiresAt: new Date(Date.now() - 1000) })
    .where(eq(dataTransfers.dataFileId, expired.id));
}, scaled(60_000));
afterAll(() => s?.close());

const alice = basic('alice', 'Secret-1');
const dea = () => eventLines(h, 'DEA').map(eventFields);

describe('the tree and nothing outside it', () => {
  it(
    'answers 400 or 404 (401 out of an open tree) to `..` and encoded traversal, never the bytes of another destination or a file',
    needs('curl'),
    async () => {
      const paths = [
        '/portal/data/DEST/../OTHER/secret.bin',
        '/portal/data/DEST/%2e%2e/OTHER/secret.bin',
        '/portal/data/DEST/%2E%2E/OTHER/secret.bin',
        '/portal/data/DEST/..%2fOTHER%2fsecret.bin',
        '/portal/data/DEST/%2e%2e%2fOTHER%2fsecret.bin',
        '/portal/data/DEST/..%5cOTHER%5csecret.bin',
        '/portal/data/DEST/..\\OTHER\\secret.bin',
        '/portal/data/DEST/a.txt%00',
        '/portal/data/DEST/a.txt%00.jpg',
        '/portal/data/DEST//a.txt',
        '/portal/data/%2e%2e/%2e%2e/etc/passwd',
        '/portal/data/DEST/..%2f..%2f..%2f..%2fetc%2fpasswd',
        `/portal/data/DEST/..%2f..%2f..%2f..%2f${encodeURIComponent(s.sources.slice(1))}%2fOTHER%2fsecret.bin`,
        '/portal/home/opener/DEST/../../bob/OTHER/secret.bin',
        '/portal/home/opener/DEST/%2e%2e/OTHER/secret.bin',
      ];
      for (const p of paths) {
        const r = await tool('curl', [
          '-sSk',
          '--path-as-is',
          '-u',
          'alice:Secret-1',
          '-w',
          '\n%{http_code}',
          `${s.url}${p}`,
        ]);
        const text = r.stdout.toString();
        const status = text.slice(text.lastIndexOf('\n') + 1);
        // 401: a path that the URL's reading leads into the tree of a user who is not open access.
        expect(p.startsWith('/portal/home/') ? ['400', '401', '404'] : ['400', '404'], `${p}: ${text}`).toContain(
          status,
        );
        expect(r.stdout.includes(secret.subarray(0, 64)), p).toBe(false);
        expect(text).not.toContain('root:');
      }
      // A `.` segment is gone once the URL is read (by the server, before the app): the same file.
      for (const p of ['/portal/data/DEST/./a.txt', '/portal/data/DEST/%2e/a.txt', '/portal/data/./DEST/a.txt']) {
        const r = await tool('curl', ['-sSk', '--path-as-is', '-u', 'alice:Secret-1', `${s.url}${p}`]);
        expect(md5(r.stdout), p).toBe(md5(bytesOf(100, 1)));
      }
    },
  );

  it("answers another user's destination exactly as one that does not exist", needs('curl'), async () => {
    const answers = [];
    for (const p of ['OTHER/', 'OTHER/secret.bin', 'NOPE/', 'NOPE/secret.bin', 'OTHER', 'NOPE']) {
      const r = await h.call('GET', `/portal/data/${p}`, { auth: alice });
      answers.push([r.status, r.text, r.headers.get('location')]);
    }
    expect(new Set(answers.map((a) => JSON.stringify(a)))).toEqual(new Set([JSON.stringify([404, 'Not found', null])]));
    expect((await h.call('PUT', '/portal/data/OTHER/x.bin', { auth: alice, body: 'x' })).status).toBe(404);
    // Its own user gets it.
    const bob = await tool('curl', ['-sSk', '-u', 'bob:Secret-2', `${s.url}/portal/data/OTHER/secret.bin`]);
    expect(md5(bob.stdout)).toBe(md5(secret));
  });

  it('lists and serves no deleted or expired file', async () => {
    const listed = await h.call('GET', '/portal/data/DEST/', { auth: alice, headers: { accept: 'application/json' } });
    expect(listed.json.map((e: { name: string }) => e.name)).toEqual(['a.txt']);
    for (const name of ['deleted.bin', 'expired.bin']) {
      expect((await h.call('GET', `/portal/data/DEST/${name}`, { auth: alice })).status, name).toBe(404);
      expect((await h.call('HEAD', `/portal/data/DEST/${name}`, { auth: alice })).status, name).toBe(404);
    }
  });
});

describe('logins', () => {
  it(
    'answers every refused login alike, 401 Login failed with the realm, its reason in a DEA line only',
    needs('curl'),
    async () => {
      const attempts: Array<[string, string, string]> = [
        ['nobody', 'Secret-1', 'Not found'],
        ['alice', 'wrong', 'Password authentication failed'],
        ['carol', 'Secret-3', 'Disabled'],
        ['selfie', 'Own-pass-1', 'Subscriber password authentication failed'],
        ['lonely', 'Secret-4', 'No associated Destinations'],
      ];
      for (const [user, password, reason] of attempts) {
        const r = await tool('curl', ['-sSk', '-u', `${user}:${password}`, '-D', '-', `${s.url}/portal/data/`]);
        const text = r.stdout.toString();
        expect(text, user).toMatch(/^HTTP\/1\.1 401/);
        expect(text, user).toMatch(/\r\nwww-authenticate: Basic realm="Data Portal"\r\n/i);
        expect(text.slice(text.indexOf('\r\n\r\n') + 4), user).toBe('Login failed');
        expect(dea().at(-1), user).toMatchObject({ UserId: user, Message: reason, Context: 'https:test' });
      }
      const malformed = await h.call('GET', '/portal/data/', { headers: { authorization: 'Basic !!!' } });
      expect([malformed.status, malformed.text]).toEqual([401, 'Login failed']);
    },
  );

  it("lets a self-service user in with an active subscriber's password only", async () => {
    const r = await h.call('GET', '/portal/data/DEST/a.txt', { auth: basic('selfie', 'Sub-pass-1') });
    expect(r.status).toBe(200);
  });

  it('records the last login, and refuses a pair that failed too often with 429 and Retry-After', async () => {
    const [user] = (await h.call('GET', '/v1/incoming/user/list', { auth: s.admin })).json.userList.filter(
      (u: { id: string }) => u.id === 'alice',
    );
    expect(user.lastLoginDate).toEqual(expect.any(Number));
    const wrong = basic('hammered', 'wrong');
    for (let i = 0; i < 3; i++) expect((await h.call('GET', '/portal/data/', { auth: wrong })).status).toBe(401);
    const refused = await h.call('GET', '/portal/data/', { auth: wrong });
    expect([refused.status, refused.text]).toEqual([429, 'Login failed']);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('sends a browser without credentials to the login page, and tells anything else to log in', async () => {
    const browser = await h.call('GET', '/portal/data/DEST/?limit=5', { headers: { accept: 'text/html,*/*;q=0.8' } });
    expect([browser.status, browser.headers.get('location')]).toEqual([
      303,
      '/portal/login?next=%2Fportal%2Fdata%2FDEST%2F%3Flimit%3D5',
    ]);
    const tool = await h.call('GET', '/portal/data/DEST/a.txt');
    expect([tool.status, tool.text, tool.headers.get('www-authenticate')]).toEqual([
      401,
      'Login failed',
      'Basic realm="Data Portal"',
    ]);
  });
});

describe('open access', () => {
  it("serves an open-access user's tree without credentials, and writes its INH line", needs('curl'), async () => {
    const listed = await h.call('GET', '/portal/home/opener/', { headers: { accept: 'application/json' } });
    expect(listed.json).toEqual([{ name: 'DEST', type: 'directory', size: null, lastModified: expect.any(String) }]);
    const page = await h.call('GET', '/portal/home/opener/DEST/');
    expect(page.text).toContain('<a href="/portal/home/opener/">home/opener</a>');
    const file = await tool('curl', ['-sSk', `${s.url}/portal/home/opener/DEST/a.txt`]);
    expect(md5(file.stdout)).toBe(md5(bytesOf(100, 1)));
    expect(eventLines(h, 'INH').map(eventFields).at(-1)).toMatchObject({ UserId: 'opener', FileName: 'a.txt' });
    expect((await h.call('GET', '/portal/home/opener')).headers.get('location')).toBe('/portal/home/opener/');
  });

  it('is no way into the tree of a user of another mode, nor of nobody', async () => {
    for (const user of ['alice', 'selfie', 'nobody', 'carol']) {
      const r = await h.call('GET', `/portal/home/${user}/DEST/a.txt`, { headers: { authorization: alice } });
      expect([r.status, r.text, r.headers.get('www-authenticate')], user).toEqual([
        401,
        'Login failed',
        'Basic realm="Data Portal"',
      ]);
    }
  });
});

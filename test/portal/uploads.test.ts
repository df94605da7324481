import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { asc, eq } from 'drizzle-orm';
import type { Context } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Base64 } from '../../core/common/crypto.ts';
import { admit } from '../../core/portal/access.ts';
import { credentialFingerprint } from '../../core/portal/revocation.ts';
import { dataFiles, dataTransfers, destinations, portalTraffic, transferHistory } from '../../db/schema.ts';
import { eventually } from '../support/engine.ts';
import { basic, type Harness } from '../support/harness.ts';
import { scaled } from '../support/time.ts';
import { needs } from '../support/tools.ts';
import { bytesOf, eventFields, eventLines, incomingUser, md5, type PortalScene, portalScene, tool } from './support.ts';

/**
 * Uploads into the portal register files as datafile/put does; deletes remove them as datafile/del
 * does. With curl over real HTTPS, and the upload form of a browser session.
 */
let s: PortalScene;
let h: Harness;
const SESSION = { token: 'session-token-of-alice', csrf: 'csrf-of-alice' };

/** Browser sessions from the portal's sessions table, as the login form's cookie names them. */
async function sessionOf(c: Context) {
  const token = /(?:^|;\s*)portal_session=([^;]+)/.exec(c.req.header('cookie') ?? '')?.[1];
  const session = token ? await h.ports.repos.portal.session(sha256Base64(token)) : null;
  if (!session) return null;
  const user = await h.ports.repos.incomingUsers.find(session.userId);
  const identity = await admit(h.ports, user!, session.subscriberId, {
    login: session.userId,
    address: 'test',
    protocol: 'https',
  });
  return { identity, login: session.userId, csrf: session.csrf };
}

beforeAll(async () => {
  s = await portalScene({ portalSession: sessionOf });
  h = s.h;
  const { admin } = s;
  await h.addDestination('DEST');
  await h.addDestination('HELD');
  await h.db
    .update(destinations)
    .set({ data: 'incoming.lifetime = "3d"\nincoming.priority = "5"' })
    .where(eq(destinations.name, 'DEST'));
  await h.db.update(destinations).set({ data: 'incoming.standby = "yes"' }).where(eq(destinations.name, 'HELD'));
  await incomingUser(h, admin, { id: 'alice', password: 'Secret-1', grant: ['put', 'delete'] }, ['DEST', 'HELD']);
  await incomingUser(h, admin, { id: 'reader', password: 'Secret-2' }, ['DEST']);
  await incomingUser(h, admin, { id: 'opener', mode: 'open-access' }, ['DEST']);
  await incomingUser(h, admin, { id: 'ruled', password: 'Secret-3', grant: ['put'] }, ['DEST']);
  await h.ports.repos.portal.setOption('ruled', 'portal.putPathPermRegex', 'DEST/incoming/.*');
  await incomingUser(h, admin, { id: 'capped', password: 'Secret-4', grant: ['put'] }, ['DEST']);
  await h.ports.repos.portal.setOption('capped', 'portal.maxUploadBytes', '1000');
  await h.ports.repos.portal.createSession(sha256Base64(SESSION.token), {
    userId: 'alice',
    subscriberId: null,
    csrf: SESSION.csrf,
    credential: credentialFingerprint((await h.ports.repos.incomingUsers.find('alice'))!),
    lastSeenAt: new Date(),
  });
}, scaled(60_000));
afterAll(() => s?.close());

const url = (p: string) => `${s.url}/portal/data/${p}`;
const curl = (user: string, password: string, ...args: string[]) =>
  tool('curl', ['-sSk', '-u', `${user}:${password}`, ...args]);
const local = (name: string, bytes: Buffer) => {
  const file = path.join(s.work, name);
  fs.writeFileSync(file, bytes);
  return file;
};
const transferOf = async (dataFileId: number) =>
  (await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, dataFileId)))[0]!;
const historyOf = async (transferId: number) =>
  h.db
    .select()
    .from(transferHistory)
    .where(eq(transferHistory.transferId, transferId))
    .orderBy(asc(transferHistory.id));

describe('curl -T', () => {
  const bytes = bytesOf(70_000, 7);
  let uploaded: { dataFileId: number; transferId: number };

  it(
    'registers the file for the destination as datafile/put does, with "Via Data Portal" and its incoming options',
    needs('curl'),
    async () => {
      const r = await curl('alice', 'Secret-1', '-T', local('new.bin', bytes), '-D', '-', url('DEST/in/new.bin'));
      expect(r.code, r.stderr).toBe(0);
      // Past curl's `Expect: 100-continue` and its interim answer.
      const [head, body] = r.stdout
        .toString()
        .replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '')
        .split('\r\n\r\n');
      expect(head).toMatch(/^HTTP\/1\.1 201/);
      expect(head).toMatch(/\r\nlocation: \/portal\/data\/DEST\/in\/new\.bin\r?/i);
      uploaded = JSON.parse(body!);
      expect(uploaded).toMatchObject({ destination: 'DEST', path: 'in/new.bin', size: 70_000, replaced: false });

      const [file] = await h.db.select().from(dataFiles).where(eq(dataFiles.id, uploaded.dataFileId));
      expect(file).toMatchObject({
        source: path.join(s.uploads, 'DEST', 'in', 'new.bin'),
        size: 70_000,
        registeredBy: 'portal:alice',
      });
      expect(md5(fs.readFileSync(file!.source))).toBe(md5(bytes));
      const transfer = await transferOf(uploaded.dataFileId);
      expect(transfer).toMatchObject({
        id: uploaded.transferId,
        destination: 'DEST',
        target: 'in/new.bin',
        priority: 5,
        status: 'WAIT',
      });
      expect(transfer.expiresAt.getTime() - transfer.scheduledAt.getTime()).toBe(3 * 86_400_000);
      expect((await historyOf(transfer.id)).map((e) => [e.status, e.comment])).toEqual([['WAIT', 'Via Data Portal']]);
    },
  );

  it(
    'writes an INH upload line and the upload traffic, and the file can be downloaded back whole',
    needs('curl'),
    async () => {
      expect(eventLines(h, 'INH').map(eventFields).at(-1)).toMatchObject({
        DataTransferId: String(uploaded.transferId),
        DestinationName: 'DEST',
        FileName: 'in/new.bin',
        FileSize: '70000',
        BytesSent: '70000',
        UserId: 'alice',
        Action: 'upload',
      });
      const traffic = await h.db.select().from(portalTraffic).where(eq(portalTraffic.userId, 'alice'));
      expect(traffic.reduce((sum, t) => sum + t.uploadBytes, 0)).toBe(70_000);
      expect(traffic.reduce((sum, t) => sum + t.uploads, 0)).toBe(1);
      const back = await curl('alice', 'Secret-1', url('DEST/in/new.bin'));
      expect(md5(back.stdout)).toBe(md5(bytes));
    },
  );

  it('replaces what the path held: the same data file, requeued with the new bytes', needs('curl'), async () => {
    const newer = bytesOf(500, 8);
    const r = await curl(
      'alice',
      'Secret-1',
      '-T',
      local('newer.bin', newer),
      '-w',
      '\n%{http_code}',
      url('DEST/in/new.bin'),
    );
    const [body, code] = r.stdout.toString().split('\n');
    expect(code).toBe('200');
    expect(JSON.parse(body!)).toMatchObject({ dataFileId: uploaded.dataFileId, replaced: true, size: 500 });
    const history = await historyOf(uploaded.transferId);
    expect(history.at(-1)?.comment).toBe('Via Data Portal');
    expect(md5((await curl('alice', 'Secret-1', url('DEST/in/new.bin'))).stdout)).toBe(md5(newer));
  });

  it('holds the files of a destination whose incoming.standby is on', needs('curl'), async () => {
    const r = await curl('alice', 'Secret-1', '-T', local('held.bin', bytesOf(10, 9)), url('HELD/held.bin'));
    const { dataFileId } = JSON.parse(r.stdout.toString());
    expect((await transferOf(dataFileId)).status).toBe('HOLD');
  });

  it('keeps a file out of sight under its final name until the whole body is in', async () => {
    const first = bytesOf(256 * 1024, 10);
    const rest = bytesOf(1000, 11);
    const partial = path.join(s.uploads, '.partial');
    const final = path.join(s.uploads, 'DEST', 'slow.bin');
    const request = https.request(url('DEST/slow.bin'), {
      method: 'PUT',
      rejectUnauthorized: false,
      headers: { authorization: basic('alice', 'Secret-1'), 'content-length': String(first.length + rest.length) },
    });
    const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
      request.on('response', (res) => {
        let body = '';
        res.on('data', (c) => void (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      request.on('error', reject);
    });
    request.write(first);
    await eventually(async () => {
      const parts = fs.existsSync(partial) ? fs.readdirSync(partial) : [];
      return parts.some((p) => fs.statSync(path.join(partial, p)).size >= first.length) ? true : undefined;
    });
    expect(fs.existsSync(final)).toBe(false);
    expect((await h.call('GET', '/portal/data/DEST/slow.bin', { auth: basic('alice', 'Secret-1') })).status).toBe(404);
    const listed = await h.call('GET', '/portal/data/DEST/', {
      auth: basic('alice', 'Secret-1'),
      headers: { accept: 'application/json' },
    });
    expect(listed.json.map((e: { name: string }) => e.name)).not.toContain('slow.bin');
    request.end(rest);
    expect((await answered).status).toBe(201);
    expect(fs.statSync(final).size).toBe(first.length + rest.length);
    expect(fs.readdirSync(partial)).toEqual([]);
  });

  it('refuses a path where a file or directory is in the way, and a directory URL', needs('curl'), async () => {
    const r = await curl(
      'alice',
      'Secret-1',
      '-T',
      local('x.bin', bytesOf(5, 12)),
      '-w',
      '%{http_code}',
      url('DEST/in/new.bin/x'),
    );
    expect(r.stdout.toString()).toBe('Cannot upload in/new.bin/x: another file or directory is in the way409');
    const dir = await h.call('PUT', '/portal/data/DEST/in/', { auth: basic('alice', 'Secret-1'), body: 'x' });
    expect([dir.status, dir.headers.get('allow')]).toEqual([405, 'GET, HEAD, POST']);
  });
});

describe('permissions and limits', () => {
  const put = (auth: string, p: string, body = 'data') =>
    h.call('PUT', p, { auth, body, headers: { 'content-type': 'application/octet-stream' } });

  // On the file and directory the curl uploads above made.
  it('refuses uploads and deletes without the permission: 403 to a user who is logged in', needs('curl'), async () => {
    const reader = basic('reader', 'Secret-2');
    for (const r of [
      await put(reader, '/portal/data/DEST/r.bin'),
      await h.call('DELETE', '/portal/data/DEST/in/new.bin', { auth: reader }),
    ]) {
      expect([r.status, r.text]).toEqual([403, 'Permission denied']);
    }
  });

  it('never lets an open-access user without put upload', async () => {
    const r = await h.call('PUT', '/portal/home/opener/DEST/open.bin', { body: 'data' });
    expect([r.status, r.text]).toEqual([403, 'Permission denied']);
    expect(fs.existsSync(path.join(s.uploads, 'DEST', 'open.bin'))).toBe(false);
    expect((await h.call('GET', '/portal/home/opener/DEST/', { headers: { accept: 'application/json' } })).status).toBe(
      200,
    );
  });

  it("follows the user's path rule for put", async () => {
    const ruled = basic('ruled', 'Secret-3');
    expect((await put(ruled, '/portal/data/DEST/elsewhere.bin')).status).toBe(403);
    expect((await put(ruled, '/portal/data/DEST/incoming/ok.bin')).status).toBe(201);
  });

  it(
    'refuses what would go over the upload quota, before or while it is sent; then the login itself',
    needs('curl'),
    async () => {
      const capped = basic('capped', 'Secret-4');
      expect((await put(capped, '/portal/data/DEST/c1.bin', 'x'.repeat(600))).status).toBe(201);
      // Its length said beforehand (curl sends Content-Length): refused before a byte is taken.
      const declared = await curl(
        'capped',
        'Secret-4',
        '-T',
        local('c2.bin', bytesOf(600, 30)),
        '-w',
        '%{http_code}',
        url('DEST/c2.bin'),
      );
      expect(declared.stdout.toString()).toBe('Upload quota exceeded429');
      // No length given (the in-process request has none): cut once it goes over, the bytes taken counted.
      const streamed = await put(capped, '/portal/data/DEST/c3.bin', 'x'.repeat(600));
      expect([streamed.status, streamed.text]).toEqual([429, 'Upload quota exceeded']);
      for (const name of ['c2.bin', 'c3.bin']) expect(fs.existsSync(path.join(s.uploads, 'DEST', name))).toBe(false);
      // A body cut off is removed once its stream closes, which may come just after the answer.
      const partial = path.join(s.uploads, '.partial');
      await eventually(async () => (fs.readdirSync(partial).length === 0 ? true : undefined), 5000, 'no partial');
      const traffic = await h.db.select().from(portalTraffic).where(eq(portalTraffic.userId, 'capped'));
      expect(traffic.reduce((sum, t) => [sum[0]! + t.uploadBytes, sum[1]! + t.uploads], [0, 0])).toEqual([1200, 1]);
      const spent = await put(capped, '/portal/data/DEST/c4.bin', 'x');
      expect([spent.status, spent.text]).toEqual([429, 'Login failed']);
      expect(eventLines(h, 'DEA').map(eventFields).at(-1)).toMatchObject({
        UserId: 'capped',
        Message: 'Upload quota exceeded',
      });
    },
  );
});

describe('DELETE', () => {
  it('marks the data file deleted and stops its transfers, as datafile/del does', async () => {
    const auth = basic('alice', 'Secret-1');
    const r = await put(auth);
    const { dataFileId, transferId } = r.json;
    const deleted = await h.call('DELETE', '/portal/data/DEST/gone/soon.bin', { auth });
    expect(deleted.status).toBe(204);
    const [file] = await h.db.select().from(dataFiles).where(eq(dataFiles.id, dataFileId));
    expect(file!.deletedAt).not.toBeNull();
    expect((await transferOf(dataFileId)).status).toBe('STOP');
    expect((await historyOf(transferId)).at(-1)).toMatchObject({ status: 'STOP', comment: 'Data file deleted' });
    expect((await h.call('GET', '/portal/data/DEST/gone/soon.bin', { auth })).status).toBe(404);
    expect((await h.call('DELETE', '/portal/data/DEST/gone/soon.bin', { auth })).status).toBe(404);
    expect((await h.call('GET', '/portal/data/DEST/gone/', { auth })).status).toBe(404);
  });

  const put = (auth: string) =>
    h.call('PUT', '/portal/data/DEST/gone/soon.bin', {
      auth,
      body: 'bytes',
      headers: { 'content-type': 'application/octet-stream' },
    });
});

describe('the upload form of a browser session', () => {
  const cookie = `portal_session=${SESSION.token}`;

  // On the directory the curl uploads above made.
  it("shows the form with the session's token on a directory's page", needs('curl'), async () => {
    const page = await h.call('GET', '/portal/data/DEST/in/', { headers: { cookie, accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.text).toContain(
      '<form class="upload" method="post" enctype="multipart/form-data" action="/portal/data/DEST/in/">',
    );
    expect(page.text).toContain(`<input type="hidden" name="csrf" value="${SESSION.csrf}"/>`);
    // A Basic login has no session: no form.
    const basicPage = await h.call('GET', '/portal/data/DEST/in/', { auth: basic('alice', 'Secret-1') });
    expect(basicPage.text).not.toContain('enctype="multipart/form-data"');
  });

  it('uploads the files of the form and sends the browser back to the page', needs('curl'), async () => {
    const bytes = bytesOf(3000, 20);
    const file = local('form.bin', bytes);
    const r = await tool('curl', [
      '-sSk',
      '-b',
      cookie,
      '-F',
      `csrf=${SESSION.csrf}`,
      '-F',
      `file=@${file};filename=from form.bin`,
      '-D',
      '-',
      url('DEST/in/'),
    ]);
    expect(r.stdout.toString()).toMatch(/^HTTP\/1\.1 303/);
    // Back to the page, with the receipt that has it confirm the file (functions/portal/upload-receipt.ts).
    expect(r.stdout.toString()).toMatch(/\r\nlocation: \/portal\/data\/DEST\/in\/\?uploaded=\d+\.n\.[^&\r]+\r\n/i);
    const back = await tool('curl', ['-sSk', '-b', cookie, url('DEST/in/from%20form.bin')]);
    expect(md5(back.stdout)).toBe(md5(bytes));
    const transfer = (await h.db.select().from(dataTransfers).where(eq(dataTransfers.target, 'in/from form.bin')))[0]!;
    expect((await historyOf(transfer.id))[0]?.comment).toBe('Via Data Portal');
  });

  it('takes a PUT or DELETE of the session only with its token in X-CSRF-Token', needs('curl'), async () => {
    const put = (headers: Record<string, string>) =>
      h.call('PUT', '/portal/data/DEST/in/scripted.bin', { body: 'scripted', headers: { cookie, ...headers } });
    const refused = await put({});
    expect([refused.status, refused.text]).toEqual([
      403,
      'Permission denied: the request has no valid token of your session',
    ]);
    expect((await put({ 'x-csrf-token': 'wrong' })).status).toBe(403);
    expect((await put({ 'x-csrf-token': SESSION.csrf })).status).toBe(201);
    const del = (headers: Record<string, string>) =>
      h.call('DELETE', '/portal/data/DEST/in/scripted.bin', { headers: { cookie, ...headers } });
    expect((await del({})).status).toBe(403);
    expect((await del({ 'x-csrf-token': SESSION.csrf })).status).toBe(204);
    // A form whose token comes in the header instead.
    const file = local('headed.bin', bytesOf(20, 22));
    const r = await tool('curl', [
      '-sSk',
      '-b',
      cookie,
      '-H',
      `X-CSRF-Token: ${SESSION.csrf}`,
      '-F',
      `file=@${file}`,
      '-w',
      '%{http_code}',
      url('DEST/in/'),
    ]);
    expect(r.stdout.toString()).toBe('303');
  });

  it('refuses a form without the token of the session: 403, nothing stored', needs('curl'), async () => {
    const file = local('forged.bin', bytesOf(10, 21));
    const attempts = [
      ['-b', cookie, '-F', 'csrf=wrong', '-F', `file=@${file}`],
      ['-b', cookie, '-F', `file=@${file}`, '-F', `csrf=${SESSION.csrf}`],
      ['-u', 'alice:Secret-1', '-F', `csrf=${SESSION.csrf}`, '-F', `file=@${file}`],
    ];
    for (const args of attempts) {
      const r = await tool('curl', ['-sSk', ...args, '-w', '%{http_code}', url('DEST/in/')]);
      expect(r.stdout.toString(), args.join(' ')).toMatch(
        /^Permission denied: the request has no valid token of your session403$/,
      );
    }
    expect(fs.existsSync(path.join(s.uploads, 'DEST', 'in', 'forged.bin'))).toBe(false);
  });
});

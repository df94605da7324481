import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { incomingAssociations, incomingUsers } from '../db/schema.ts';
import { createHarness, type Harness } from './support/harness.ts';

let h: Harness;
let admin: string; // `.*` also grants showSensitiveInfo
let plain: string; // every incoming-user service, no showSensitiveInfo
let outsider: string;
beforeAll(async () => {
  h = await createHarness();
  admin = await h.client('admin', ['.*']);
  plain = await h.client('plain', ['incoming.*']);
  outsider = await h.client('outsider', ['webUser.*|destinationList']);
});
afterAll(() => h.close());

const OK = '{"status":"ok"}';
const error = (message: string) => JSON.stringify({ status: 'error', message });
let n = 0;
const uid = (prefix = 'u') => `${prefix}${++n}`;
const qs = (p: Record<string, string>) => new URLSearchParams(p).toString();
const post = (path: string, p: Record<string, string>, auth = admin) => h.call('POST', `${path}?${qs(p)}`, { auth });
const add = (p: Record<string, string>, auth = admin) => post('/v1/incoming/user/add', p, auth);
const add2 = (p: Record<string, string>, auth = admin) => post('/v1/incoming/user/add2', p, auth);
const fields = (id: string) => ({ id, email: `${id}@example.org`, iso: 'gb' });
const categories = (id: string, body: unknown) =>
  h.call('POST', `/v1/incoming/category/add?id=${id}`, { auth: admin, body });
const associate = (id: string, destination: string) => post('/v1/incoming/association/add', { id, destination });
const associations = async (id: string) =>
  (await h.call('GET', `/v1/incoming/association/list?id=${id}`, { auth: admin })).json.associationList;
async function listed(id: string, auth = admin) {
  const r = await h.call('GET', '/v1/incoming/user/list', { auth });
  expect(r.status).toBe(200);
  return r.json.userList.find((u: { id: string }) => u.id === id);
}
const row = async (id: string) => (await h.db.select().from(incomingUsers).where(eq(incomingUsers.id, id)))[0];
const record = (id: string, over: Record<string, unknown> = {}) => ({
  id,
  email: `${id}@example.org`,
  iso: 'gb',
  portalService: 'standard-login',
  active: false,
  associations: [],
  lastLoginDate: null,
  ...over,
});

describe('POST /v1/incoming/user/add', () => {
  it('creates an inactive standard-login user with an encrypted password', async () => {
    const id = uid();
    const r = await add({ ...fields(id), pass: 'Secret-1' });
    expect(r.status).toBe(200);
    expect(r.text).toBe(OK);
    expect(await listed(id, plain)).toEqual(record(id));
    expect(await listed(id)).toEqual(record(id, { password: 'Secret-1' }));
    const stored = await row(id);
    expect(stored!.passwordSealed).not.toContain('Secret-1');
    expect(await h.ports.secrets.decrypt(stored!.passwordSealed!)).toBe('Secret-1');
  });

  it('takes portalService and active on creation and stores iso in lower case', async () => {
    const id = uid();
    expect(
      (await add({ ...fields(id), iso: 'FR', pass: 'p', portalService: 'self-service', active: 'TRUE' })).text,
    ).toBe(OK);
    expect(await listed(id, plain)).toEqual(record(id, { iso: 'fr', portalService: 'self-service', active: true }));
  });

  it('updates an existing user; omitted or empty portalService and active stay unchanged', async () => {
    const id = uid();
    await add({ ...fields(id), pass: 'old', portalService: 'open-access', active: 'true' });
    expect((await add({ id, email: 'new@example.org', iso: 'de', pass: 'new' })).text).toBe(OK);
    expect(await listed(id)).toEqual(
      record(id, { email: 'new@example.org', iso: 'de', portalService: 'open-access', active: true, password: 'new' }),
    );
    expect((await add({ ...fields(id), pass: 'new', portalService: '', active: '' })).text).toBe(OK);
    expect(await listed(id, plain)).toMatchObject({ portalService: 'open-access', active: true });
    await add({ ...fields(id), pass: 'new', portalService: 'standard-login', active: 'false' });
    expect(await listed(id, plain)).toMatchObject({ portalService: 'standard-login', active: false });
  });

  it.each(['id', 'email', 'iso', 'pass'])('412 when %s is missing or empty', async (name) => {
    const p: Record<string, string> = { ...fields(uid()), pass: 'p' };
    delete p[name];
    const r = await add(p);
    expect([r.status, r.text]).toEqual([412, `Missing parameter: ${name}`]);
    expect((await add({ ...fields(uid()), pass: 'p', [name]: '' })).status).toBe(412);
  });

  it.each([
    ['id', 'a-b', "1 to 128 letters, digits, '_', '.' or '@' expected"],
    ['id', 'x'.repeat(129), "1 to 128 letters, digits, '_', '.' or '@' expected"],
    ['email', 'nobody', 'e-mail address expected'],
    ['iso', 'gbr', 'two-letter ISO country code expected'],
    ['iso', 'g1', 'two-letter ISO country code expected'],
    ['active', 'yes', 'true or false expected'],
    ['portalService', 'Open-Access', 'one of standard-login, open-access, self-service expected'],
  ])('400 for %s=%s', async (name, value, expected) => {
    const r = await add({ ...fields(uid()), pass: 'p', [name]: value });
    expect(r.status).toBe(400);
    expect(r.text).toBe(
      `Invalid value for parameter ${name}: '${value.length > 80 ? `${value.slice(0, 80)}...` : value}' (${expected})`,
    );
  });

  it('accepts letters, digits, _ . @ in ids and refuses an unknown country', async () => {
    const id = `A_b.c@${uid()}`;
    expect((await add({ ...fields(id), email: 'x.y@example.org', pass: 'p' })).text).toBe(OK);
    expect(await listed(id, plain)).toMatchObject({ id, email: 'x.y@example.org' });
    const missing = uid();
    const r = await add({ ...fields(missing), iso: 'ZZ', pass: 'p' });
    expect([r.status, r.text]).toEqual([500, error('Country zz not found')]);
    expect(await row(missing)).toBeUndefined();
  });
  it('concurrent creations of one id all succeed; the later ones apply as updates', async () => {
    const id = uid();
    const replies = await Promise.all(
      ['a', 'b', 'c'].map((x) => add({ ...fields(id), pass: x, portalService: 'open-access' })),
    );
    expect(replies.map((r) => r.text)).toEqual([OK, OK, OK]);
    expect(await listed(id)).toMatchObject({
      id,
      portalService: 'open-access',
      password: expect.stringMatching(/^[abc]$/),
    });
  });
});

describe('POST /v1/incoming/user/add2', () => {
  it('creates an active user without a password; active=false creates it inactive', async () => {
    const [a, b] = [uid(), uid()];
    expect((await add2(fields(a))).text).toBe(OK);
    expect((await add2({ ...fields(b), active: 'false', portalService: 'open-access' })).text).toBe(OK);
    expect(await listed(a)).toEqual(record(a, { active: true, password: null }));
    expect(await listed(b)).toEqual(record(b, { portalService: 'open-access', password: null }));
    expect((await row(a))!.passwordSealed).toBeNull();
  });

  it('updates without touching the password or an omitted active flag', async () => {
    const id = uid();
    await add({ ...fields(id), pass: 'keep' });
    expect((await add2({ id, email: 'changed@example.org', iso: 'it', active: '' })).text).toBe(OK);
    expect(await listed(id)).toEqual(record(id, { email: 'changed@example.org', iso: 'it', password: 'keep' }));
  });

  it('checks parameters and country like add', async () => {
    for (const name of ['id', 'email', 'iso'] as const) {
      const p: Record<string, string> = fields(uid());
      delete p[name];
      expect((await add2(p)).text).toBe(`Missing parameter: ${name}`);
    }
    expect((await add2({ ...fields(uid()), id: 'bad-id' })).status).toBe(400);
    expect((await add2({ ...fields(uid()), active: 'on' })).status).toBe(400);
    expect((await add2({ ...fields(uid()), iso: 'xx' })).text).toBe(error('Country xx not found'));
  });
});

describe('GET /v1/incoming/user/list', () => {
  it('lists every user, active or not, ordered by id', async () => {
    const [b, a] = [`zb${uid()}`, `za${uid()}`];
    await add({ ...fields(b), pass: 'p' });
    await add2(fields(a));
    const ids: string[] = (await h.call('GET', '/v1/incoming/user/list', { auth: plain })).json.userList.map(
      (u: { id: string }) => u.id,
    );
    expect(ids).toEqual([...ids].sort());
    expect(ids).toEqual(expect.arrayContaining([a, b]));
    expect(ids.indexOf(a)).toBeLessThan(ids.indexOf(b));
  });

  it('filters by destination, with the exact body, with and without showSensitiveInfo', async () => {
    const [dest, other, u1, u2, u3] = [uid('dest'), uid('dest'), uid(), uid(), uid()];
    await h.addDestination(dest);
    await h.addDestination(other);
    await add({ ...fields(u1), pass: 'pw1', active: 'true' });
    await add2(fields(u2));
    await add2(fields(u3));
    await associate(u1, dest);
    await associate(u1, other);
    await associate(u2, dest);
    await associate(u3, other);
    const r = await h.call('GET', `/v1/incoming/user/list?destination=${dest}`, { auth: plain });
    const users = [
      record(u1, { active: true, associations: [dest, other].sort() }),
      record(u2, { active: true, associations: [dest] }),
    ];
    expect(r.text).toBe(JSON.stringify({ status: 'ok', userList: users }));
    const s = await h.call('GET', `/v1/incoming/user/list?destination=${dest}`, { auth: admin });
    expect(s.json.userList).toEqual([
      { ...users[0], password: 'pw1' },
      { ...users[1], password: null },
    ]);
    const empty = uid('dest');
    await h.addDestination(empty);
    expect((await h.call('GET', `/v1/incoming/user/list?destination=${empty}`, { auth: admin })).text).toBe(
      '{"status":"ok","userList":[]}',
    );
  });

  it('refuses an unknown destination', async () => {
    const r = await h.call('GET', '/v1/incoming/user/list?destination=nowhere', { auth: admin });
    expect([r.status, r.text]).toEqual([500, error('Destination nowhere not found')]);
  });
});

describe('DELETE /v1/incoming/user/del/{id}', () => {
  it('soft-deletes: the row and associations stay and a later add reactivates', async () => {
    const [id, dest] = [uid(), uid('dest')];
    await h.addDestination(dest);
    await add({ ...fields(id), pass: 'p', active: 'true' });
    await associate(id, dest);
    const r = await h.call('DELETE', `/v1/incoming/user/del/${id}`, { auth: admin });
    expect(r.text).toBe(OK);
    expect(await listed(id, plain)).toEqual(record(id, { associations: [dest] }));
    expect(await h.db.select().from(incomingAssociations).where(eq(incomingAssociations.userId, id))).toHaveLength(1);
    expect((await associate(id, dest)).text).toBe(error(`User ${id} not found/active`));
    expect((await h.call('DELETE', `/v1/incoming/user/del/${id}`, { auth: admin })).text).toBe(OK);
    await add({ ...fields(id), pass: 'p', active: 'true' });
    expect(await listed(id, plain)).toEqual(record(id, { active: true, associations: [dest] }));
  });

  it('refuses an unknown user', async () => {
    const r = await h.call('DELETE', '/v1/incoming/user/del/ghost', { auth: admin });
    expect([r.status, r.text]).toEqual([500, error('User ghost not found')]);
  });
});

describe('POST /v1/incoming/category/add', () => {
  it.each([
    [['my-ecpds-group'], false, true],
    [['ECPDS'], false, true],
    [['a', 'xEcPdSx'], false, true],
    [['other'], true, false],
    [['ecpd', 'pds'], true, false],
    [[], true, false],
  ])('%j sets active from %s to %s, storing no categories', async (list, before, after) => {
    const id = uid();
    await add2({ ...fields(id), active: String(before) });
    expect((await categories(id, list)).text).toBe(OK);
    expect(await listed(id, plain)).toEqual(record(id, { active: after }));
  });

  it('refuses an unknown user, a missing id or body, and a body that is not an array of strings', async () => {
    expect((await categories('ghost', ['ECPDS'])).text).toBe(error('User ghost not found'));
    const noId = await h.call('POST', '/v1/incoming/category/add', { auth: admin, body: [] });
    expect([noId.status, noId.text]).toEqual([412, 'Missing parameter: id']);
    const noBody = await h.call('POST', '/v1/incoming/category/add?id=x', { auth: admin });
    expect([noBody.status, noBody.text]).toEqual([412, 'Missing parameter: body']);
    for (const body of [{ a: 'ECPDS' }, '"ECPDS"', [1]]) {
      const r = await categories('x', body);
      expect(r.status).toBe(400);
      expect(r.text).toMatch(/^Invalid request body: /);
    }
  });
});

describe('incoming associations', () => {
  it('add is idempotent, the list is sorted, del removes one', async () => {
    const id = uid();
    const [b, a, c] = [`b${uid('d')}`, `a${uid('d')}`, `c${uid('d')}`];
    for (const d of [b, a, c]) await h.addDestination(d);
    await add2(fields(id));
    for (const d of [b, a, c, a]) expect((await associate(id, d)).text).toBe(OK);
    const r = await h.call('GET', `/v1/incoming/association/list?id=${id}`, { auth: plain });
    expect(r.text).toBe(JSON.stringify({ status: 'ok', associationList: [a, b, c] }));
    const del = await h.call('DELETE', `/v1/incoming/association/del?id=${id}&destination=${b}`, { auth: admin });
    expect(del.text).toBe(OK);
    expect(await associations(id)).toEqual([a, c]);
  });

  it('add refuses an inactive or unknown user and an unknown destination', async () => {
    const [idle, active, dest] = [uid(), uid(), uid('dest')];
    await h.addDestination(dest);
    await add({ ...fields(idle), pass: 'p' });
    await add2(fields(active));
    const r = await associate(idle, dest);
    expect([r.status, r.text]).toEqual([500, error(`User ${idle} not found/active`)]);
    expect((await associate('ghost', dest)).text).toBe(error('User ghost not found/active'));
    expect((await associate(active, 'nowhere')).text).toBe(error('Destination nowhere not found'));
    expect(await associations(idle)).toEqual([]);
  });

  it('del and list refuse unknown users and destinations; del refuses a missing association', async () => {
    const [id, dest] = [uid(), uid('dest')];
    await h.addDestination(dest);
    await add2(fields(id));
    const del = (u: string, d: string) =>
      h.call('DELETE', `/v1/incoming/association/del?id=${u}&destination=${d}`, { auth: admin });
    expect((await del('ghost', dest)).text).toBe(error('User ghost not found'));
    expect((await del(id, 'nowhere')).text).toBe(error('Destination nowhere not found'));
    const missing = await del(id, dest);
    expect(missing.status).toBe(500);
    expect(missing.json.status).toBe('error');
    expect((await h.call('GET', '/v1/incoming/association/list?id=ghost', { auth: admin })).text).toBe(
      error('User ghost not found'),
    );
    expect((await h.call('GET', `/v1/incoming/association/list?id=${id}`, { auth: admin })).text).toBe(
      '{"status":"ok","associationList":[]}',
    );
  });

  it.each([
    ['POST', '/v1/incoming/association/add', 'id'],
    ['POST', '/v1/incoming/association/add?id=x', 'destination'],
    ['DELETE', '/v1/incoming/association/del?destination=d', 'id'],
    ['DELETE', '/v1/incoming/association/del?id=x&destination=', 'destination'],
    ['GET', '/v1/incoming/association/list?id=', 'id'],
  ])('412 for %s %s', async (method, path, name) => {
    const r = await h.call(method, path, { auth: admin });
    expect([r.status, r.text]).toEqual([412, `Missing parameter: ${name}`]);
  });
});

describe('permissions', () => {
  beforeAll(() => h.addDestination('permd'));
  it.each([
    ['incomingUserAdd', 'POST', `/v1/incoming/user/add?${qs({ ...fields('perm'), pass: 'p' })}`],
    ['incomingUserAdd2', 'POST', `/v1/incoming/user/add2?${qs(fields('perm'))}`],
    ['incomingUserList', 'GET', '/v1/incoming/user/list'],
    ['incomingUserDel', 'DELETE', '/v1/incoming/user/del/perm'],
    ['incomingCategoryAdd', 'POST', '/v1/incoming/category/add?id=perm'],
    ['incomingAssociationAdd', 'POST', '/v1/incoming/association/add?id=perm&destination=permd'],
    ['incomingAssociationDel', 'DELETE', '/v1/incoming/association/del?id=perm&destination=permd'],
    ['incomingAssociationList', 'GET', '/v1/incoming/association/list?id=perm'],
  ])('%s is refused to a client without it and allowed with only it', async (service, method, path) => {
    await add2({ ...fields('perm'), active: 'true' });
    await associate('perm', 'permd');
    const body = service === 'incomingCategoryAdd' ? ['ECPDS'] : undefined;
    const refused = await h.call(method, path, { auth: outsider, body });
    expect([refused.status, refused.text]).toEqual([500, error('User not authorized')]);
    const allowed = await h.call(method, path, { auth: await h.client(`only-${service}`, [service]), body });
    expect(allowed.status).toBe(200);
    expect(allowed.json.status).toBe('ok');
  });
});

describe('POST /v1/incoming/association/add', () => {
  it('adds an association that exists already as a no-op: ok, and listed once', async () => {
    const [id, dest] = [uid(), uid('dest')];
    await h.addDestination(dest);
    await add({ ...fields(id), pass: 'p', active: 'true' });
    expect((await associate(id, dest)).text).toBe(OK);
    expect((await associate(id, dest)).text).toBe(OK);
    expect(await associations(id)).toEqual([dest]);
  });
});

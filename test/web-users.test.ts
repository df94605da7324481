import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webUserCategories, webUsers } from '../db/schema.ts';
import { createHarness, type Harness } from './support/harness.ts';

let h: Harness;
let admin: string; // `.*` also grants showSensitiveInfo
let plain: string; // every web-user service, no showSensitiveInfo
let outsider: string;
beforeAll(async () => {
  h = await createHarness();
  admin = await h.client('admin', ['.*']);
  plain = await h.client('plain', ['webUser.*']);
  outsider = await h.client('outsider', ['incoming.*|destinationList']);
});
afterAll(() => h.close());

const OK = '{"status":"ok"}';
const error = (message: string) => JSON.stringify({ status: 'error', message });
let n = 0;
const uid = (prefix = 'w') => `${prefix}-${++n}`;
const qs = (p: Record<string, string>) => new URLSearchParams(p).toString();
const add = (p: Record<string, string>, auth = admin) => h.call('POST', `/v1/web/user/add?${qs(p)}`, { auth });
const add2 = (p: Record<string, string>, auth = admin) => h.call('POST', `/v1/web/user/add2?${qs(p)}`, { auth });
const del = (id: string, auth = admin) => h.call('DELETE', `/v1/web/user/del/${id}`, { auth });
const list = (query = '', auth = admin) => h.call('GET', `/v1/web/user/list${query}`, { auth });
const row = async (id: string) => (await h.db.select().from(webUsers).where(eq(webUsers.id, id)))[0];
const grant = (id: string, ...categories: string[]) =>
  h.db.insert(webUserCategories).values(categories.map((category) => ({ userId: id, category })));
const clear = async (id: string) => h.ports.secrets.decrypt((await row(id))!.passwordSealed);
async function listed(id: string, auth = admin) {
  const r = await list('', auth);
  expect(r.status).toBe(200);
  return r.json.userList.find((u: { id: string }) => u.id === id);
}
function expectSealed(stored: { passwordSealed: string; passwordHash: string }, pass: string) {
  expect(stored.passwordSealed).not.toContain(pass);
  expect(stored.passwordHash).not.toContain(pass);
  expect(stored.passwordHash).toMatch(/^scrypt\$/);
}

describe('POST /v1/web/user/add', () => {
  it('creates an inactive user by default, password encrypted and hashed', async () => {
    const id = uid();
    const r = await add({ id, pass: 'Clear-Pass-1', name: 'Jane Doe' });
    expect([r.status, r.text]).toEqual([200, OK]);
    const stored = (await row(id))!;
    expect(stored).toMatchObject({ id, name: 'Jane Doe', active: false });
    expectSealed(stored, 'Clear-Pass-1');
    expect(await clear(id)).toBe('Clear-Pass-1');
    expect(await listed(id)).toBeUndefined();
  });

  it('creates an active user without a name', async () => {
    const id = uid();
    expect((await add({ id, pass: 'p', active: 'TRUE' })).text).toBe(OK);
    expect(await listed(id, plain)).toEqual({ id, name: null, active: true, categories: [] });
  });

  it('412 Missing parameter: pass when creating without pass or with an empty one', async () => {
    for (const p of [{}, { pass: '' }, { pass: ' ' }] as Record<string, string>[]) {
      const id = uid();
      const r = await add({ id, name: 'n', ...p });
      expect([r.status, r.text]).toEqual([412, 'Missing parameter: pass']);
      expect(await row(id)).toBeUndefined();
    }
  });

  it('412 for a missing or empty id', async () => {
    for (const q of ['pass=p', 'id=&pass=p']) {
      const r = await h.call('POST', `/v1/web/user/add?${q}`, { auth: admin });
      expect([r.status, r.text]).toEqual([412, 'Missing parameter: id']);
    }
  });

  it('update: omitted or empty pass, name and active leave the user unchanged', async () => {
    const id = uid();
    await add({ id, pass: 'first', name: 'First', active: 'true' });
    const before = (await row(id))!;
    expect((await add({ id })).text).toBe(OK);
    expect((await add({ id, pass: '', name: '', active: '' })).text).toBe(OK);
    const after = (await row(id))!;
    expect(after).toMatchObject({
      name: 'First',
      active: true,
      passwordSealed: before.passwordSealed,
      passwordHash: before.passwordHash,
    });
    expect(await clear(id)).toBe('first');
  });

  it('update: given pass, name and active replace the old values', async () => {
    const id = uid();
    await add({ id, pass: 'first', name: 'First' });
    const before = (await row(id))!;
    expect((await add({ id, pass: 'second', name: 'Second', active: 'true' })).text).toBe(OK);
    const after = (await row(id))!;
    expect(after).toMatchObject({ name: 'Second', active: true });
    expect(after.passwordHash).not.toBe(before.passwordHash);
    expectSealed(after, 'second');
    expect(await listed(id)).toEqual({ id, name: 'Second', active: true, categories: [], password: 'second' });
    await add({ id, active: 'false' });
    expect((await row(id))!.active).toBe(false);
    expect(await listed(id)).toBeUndefined();
  });

  it.each([
    ['id', 'a@b', "1 to 32 letters, digits, '_', '.' or '-' expected"],
    ['id', 'a b', "1 to 32 letters, digits, '_', '.' or '-' expected"],
    ['id', 'x'.repeat(33), "1 to 32 letters, digits, '_', '.' or '-' expected"],
    ['active', 'yes', 'true or false expected'],
  ])('400 for %s=%s', async (name, value, expected) => {
    const r = await add({ id: uid(), pass: 'p', [name]: value });
    expect([r.status, r.text]).toEqual([400, `Invalid value for parameter ${name}: '${value}' (${expected})`]);
  });

  it('accepts ids of 32 letters, digits, _ . -', async () => {
    const id = `A_b.c-${'9'.repeat(26)}`;
    expect((await add({ id, pass: 'p' })).text).toBe(OK);
    expect(await row(id)).toBeDefined();
  });
});

describe('POST /v1/web/user/add2', () => {
  it('creates an inactive user with a generated password, returned once', async () => {
    const id = uid();
    const r = await add2({ id, name: 'Gen' });
    expect(r.status).toBe(200);
    expect(r.text).toMatch(/^\{"status":"ok","pass":"[A-Za-z0-9]{8,}"\}$/);
    const stored = (await row(id))!;
    expect(stored).toMatchObject({ name: 'Gen', active: false });
    expectSealed(stored, r.json.pass);
    expect(await clear(id)).toBe(r.json.pass);
    const other = await add2({ id: uid() });
    expect(other.json.pass).not.toBe(r.json.pass);
  });

  it('active=true lists the user with the generated password under showSensitiveInfo', async () => {
    const id = uid();
    const r = await add2({ id, active: 'true' });
    expect(await listed(id)).toEqual({ id, name: null, active: true, categories: [], password: r.json.pass });
  });

  it('refuses an existing id, whether created by add or add2, and changes nothing', async () => {
    const [a, b] = [uid(), uid()];
    await add({ id: a, pass: 'kept', name: 'A', active: 'true' });
    const first = await add2({ id: b });
    const before = (await row(a))!;
    const r = await add2({ id: a, name: 'other', active: 'false' });
    expect([r.status, r.text]).toEqual([500, error(`Web user ${a} already exists`)]);
    expect((await add2({ id: b })).text).toBe(error(`Web user ${b} already exists`));
    expect(await row(a)).toEqual(before);
    expect(await clear(b)).toBe(first.json.pass);
  });

  it('412 for a missing id, 400 for a bad id or boolean', async () => {
    const r = await h.call('POST', '/v1/web/user/add2?name=x', { auth: admin });
    expect([r.status, r.text]).toEqual([412, 'Missing parameter: id']);
    expect((await add2({ id: 'no@at' })).status).toBe(400);
    const b = await add2({ id: uid(), active: '1' });
    expect([b.status, b.text]).toEqual([400, "Invalid value for parameter active: '1' (true or false expected)"]);
  });
});

describe('GET /v1/web/user/list', () => {
  it('lists only active users, with sorted categories, filtered by category', async () => {
    const cat = uid('cat');
    const [b, a, idle, outside] = [`zb-${uid()}`, `za-${uid()}`, uid(), uid()];
    await add({ id: b, pass: 'pb', name: 'B', active: 'true' });
    await add({ id: a, pass: 'pa', active: 'true' });
    await add({ id: idle, pass: 'pi' });
    await add({ id: outside, pass: 'po', active: 'true' });
    await grant(b, cat, 'zeta', 'alpha');
    await grant(a, cat);
    await grant(idle, cat);
    const r = await list(`?category=${cat}`, plain);
    const users = [
      { id: a, name: null, active: true, categories: [cat] },
      { id: b, name: 'B', active: true, categories: ['alpha', cat, 'zeta'].sort() },
    ];
    expect(r.text).toBe(JSON.stringify({ status: 'ok', userList: users }));
    const s = await list(`?category=${cat}`, admin);
    expect(s.text).toBe(
      JSON.stringify({
        status: 'ok',
        userList: [
          { ...users[0], password: 'pa' },
          { ...users[1], password: 'pb' },
        ],
      }),
    );
    expect((await list('?category=nobody-has-this')).text).toBe('{"status":"ok","userList":[]}');
  });

  it('without a filter: every active user ordered by id, passwords only with showSensitiveInfo', async () => {
    const [x, y] = [uid(), uid()];
    await add({ id: x, pass: 'px', active: 'true' });
    await add({ id: y, pass: 'py' });
    const r = await list('', plain);
    const users: Array<{ id: string; active: boolean }> = r.json.userList;
    expect(users.map((u) => u.id)).toEqual(users.map((u) => u.id).sort());
    expect(users.every((u) => u.active && !('password' in u))).toBe(true);
    expect(users.map((u) => u.id)).toContain(x);
    expect(users.map((u) => u.id)).not.toContain(y);
    expect(await listed(x)).toEqual({ id: x, name: null, active: true, categories: [], password: 'px' });
  });
});

describe('DELETE /v1/web/user/del/{id}', () => {
  it('deletes the row and its categories; the id can be created again', async () => {
    const id = uid();
    await add({ id, pass: 'p', active: 'true' });
    await grant(id, 'c1');
    const r = await del(id);
    expect([r.status, r.text]).toEqual([200, OK]);
    expect(await row(id)).toBeUndefined();
    expect(await h.db.select().from(webUserCategories).where(eq(webUserCategories.userId, id))).toEqual([]);
    expect(await listed(id)).toBeUndefined();
    expect((await add2({ id })).status).toBe(200);
  });

  it('refuses an unknown or already deleted user', async () => {
    const id = uid();
    await add({ id, pass: 'p' });
    await del(id);
    const r = await del(id);
    expect([r.status, r.text]).toEqual([500, error(`User ${id} not found`)]);
    expect((await del('ghost')).text).toBe(error('User ghost not found'));
  });
});

describe('permissions', () => {
  it.each([
    ['webUserAdd', 'POST', '/v1/web/user/add?id=perm&pass=p'],
    ['webUserAdd2', 'POST', '/v1/web/user/add2?id=perm2'],
    ['webUserList', 'GET', '/v1/web/user/list'],
    ['webUserDel', 'DELETE', '/v1/web/user/del/perm'],
  ])('%s is refused to a client without it and allowed with only it', async (service, method, path) => {
    await add({ id: 'perm', pass: 'p' });
    await del('perm2');
    const refused = await h.call(method, path, { auth: outsider });
    expect([refused.status, refused.text]).toEqual([500, error('User not authorized')]);
    const allowed = await h.call(method, path, { auth: await h.client(`only-${service}`, [service]) });
    expect(allowed.status).toBe(200);
    expect(allowed.json.status).toBe('ok');
  });

  it('a client without webUserAdd gets User not authorized, not the 412 for pass', async () => {
    const r = await add({ id: uid() }, outsider);
    expect([r.status, r.text]).toEqual([500, error('User not authorized')]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataFiles, dataTransfers } from '../../db/schema.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/** The portal's repository on the suite's database: the tree's rules, limits across servers, traffic. */
let h: Harness;
let admin: string;
const now = new Date('2026-11-27T12:00:00Z');
const hour = 3600_000;

beforeAll(async () => {
  h = await createHarness();
  admin = await h.client('admin', ['.*']);
  await h.addDestination('TREE');
  const add = (id: string) =>
    h.call('POST', `/v1/incoming/user/add?id=${id}&email=${id}@example.org&iso=gb&pass=Secret-1`, { auth: admin });
  for (const id of ['alice', 'bob', 'carol']) expect((await add(id)).status).toBe(200);
});
afterAll(() => h.close());

let registered = 0;
async function file(target: string, over: Partial<typeof dataTransfers.$inferInsert> = {}, deleted = false) {
  const [f] = await h.db
    .insert(dataFiles)
    .values({
      source: `/data/${++registered}`,
      size: registered,
      registeredBy: 'test',
      createdAt: new Date(now.getTime() - hour + registered),
      deletedAt: deleted ? now : null,
    })
    .returning();
  const [t] = await h.db
    .insert(dataTransfers)
    .values({
      dataFileId: f!.id,
      destination: 'TREE',
      target,
      uniqueName: String(registered),
      priority: 99,
      status: 'DONE',
      scheduledAt: new Date(now.getTime() - hour),
      expiresAt: new Date(now.getTime() + hour),
      ...over,
    })
    .returning();
  return t!;
}

describe('the portal repository', () => {
  it('gives a new incoming user dir, get, mtime and size', async () => {
    expect(await h.ports.repos.portal.permissions('alice')).toEqual(['dir', 'get', 'mtime', 'size']);
    await h.ports.repos.portal.grant('alice', ['put', 'delete']);
    await h.ports.repos.portal.revoke('alice', ['mtime']);
    expect(await h.ports.repos.portal.permissions('alice')).toEqual(['delete', 'dir', 'get', 'put', 'size']);
  });

  it('lists a directory by path: directories from targets, the newest of a path, only available files', async () => {
    await file('a.txt');
    const older = await file('b.txt');
    const newer = await file('b.txt');
    for (let i = 0; i < 40; i++) await file(`dir/x${String(i).padStart(2, '0')}`);
    await file('dir/sub/deep.bin');
    await file('c.txt', { status: 'INIT' });
    await file('d.txt', { status: 'SCHE' });
    await file('e.txt', { status: 'FETC' });
    await file('f.txt', { scheduledAt: new Date(now.getTime() + 1000) });
    await file('g.txt', { expiresAt: new Date(now.getTime() - 1000) });
    await file('h.txt', {}, true);
    await file('dir.txt', { status: 'WAIT' });
    await file('../escape', {});
    const repo = h.ports.repos.portal;
    const root = await repo.list('TREE', '', now, { after: null, limit: 100 });
    expect(root.map((e) => `${e.type}:${e.name}`)).toEqual([
      'file:a.txt',
      'file:b.txt',
      'file:dir.txt',
      'directory:dir',
    ]);
    const b = root.find((e) => e.name === 'b.txt');
    expect(b?.type === 'file' && b.file.transferId).toBe(newer.id);
    expect(newer.id).toBeGreaterThan(older.id);

    const dir = await repo.list('TREE', 'dir/', now, { after: null, limit: 100 });
    expect(dir).toHaveLength(41);
    // In byte order of the paths: `sub/` before `x00`.
    expect(dir[0]).toEqual({ type: 'directory', name: 'sub' });
    // Pages, each going on after the last name of the one before.
    const names: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await repo.list('TREE', 'dir/', now, { after, limit: 7 });
      names.push(...page.map((e) => e.name));
      if (page.length < 7) break;
      const last = page.at(-1)!;
      after = last.type === 'directory' ? `${last.name}/` : last.name;
    }
    expect(names).toEqual(dir.map((e) => e.name));
    // A directory is one entry on a page, however many files it holds.
    const page = await repo.list('TREE', '', now, { after: 'b.txt', limit: 2 });
    expect(page.map((e) => e.name)).toEqual(['dir.txt', 'dir']);
  });

  it('lists a directory of many directories entry by entry, with the same pages and rules', async () => {
    await h.addDestination('WALK');
    const put = (target: string, over: Partial<typeof dataTransfers.$inferInsert> = {}) =>
      file(target, { destination: 'WALK', ...over });
    await put('../escape');
    await put('./hidden');
    await put('a.txt');
    await put('d1.txt');
    for (let i = 0; i < 30; i++) await put(`d1/f${i}`);
    for (let i = 0; i < 30; i++) await put(`d2/f${i}`, { expiresAt: new Date(now.getTime() - 1000) });
    for (let i = 0; i < 30; i++) await put(`d10/f${i}`);
    await put('e');
    const newest = await put('e');
    for (let i = 0; i < 30; i++) await put(`z/f${i}`);
    for (let i = 0; i < 20; i++) await put(`z/sub/f${i}`);
    const repo = h.ports.repos.portal;
    const top = await repo.list('WALK', '', now, { after: null, limit: 20 });
    expect(top.map((e) => `${e.type}:${e.name}`)).toEqual([
      'file:a.txt',
      'file:d1.txt',
      'directory:d1',
      'directory:d10',
      'file:e',
      'directory:z',
    ]);
    const e = top.find((entry) => entry.name === 'e');
    expect(e?.type === 'file' && e.file.transferId).toBe(newest.id);
    const names: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await repo.list('WALK', '', now, { after, limit: 2 });
      names.push(...page.map((entry) => entry.name));
      if (page.length < 2) break;
      const last = page.at(-1)!;
      after = last.type === 'directory' ? `${last.name}/` : last.name;
    }
    expect(names).toEqual(top.map((entry) => entry.name));
    const z = await repo.list('WALK', 'z/', now, { after: null, limit: 100 });
    expect(z.at(-1)).toEqual({ type: 'directory', name: 'sub' });
    expect(z).toHaveLength(31);
  });

  it('finds an available file by its exact path only', async () => {
    const repo = h.ports.repos.portal;
    expect((await repo.file('TREE', 'dir/sub/deep.bin', now))?.path).toBe('dir/sub/deep.bin');
    for (const path of ['dir/sub', 'c.txt', 'g.txt', 'h.txt', 'dir/sub/deep.bi']) {
      expect(await repo.file('TREE', path, now)).toBeNull();
    }
  });

  it('reads what admission needs of a user in one statement, as the separate reads give it', async () => {
    const repo = h.ports.repos.portal;
    await repo.setOption('alice', 'portal.maxConnections', '3');
    await repo.setOption('alice', 'portal.getPathPermRegex', 'TREE/.*');
    await h.ports.repos.incomingUsers.addAssociation('alice', 'TREE');
    const opened = await repo.openConnection({
      userId: 'alice',
      server: 's1',
      protocol: 'https',
      max: 5,
      now,
      leaseMs: 60_000,
    });
    const admission = await repo.admission('alice', now);
    expect(admission).toEqual({
      options: await repo.options('alice'),
      destinations: await h.ports.repos.incomingUsers.associations('alice'),
      permissions: await repo.permissions('alice'),
      connections: await repo.connections('alice', now),
    });
    expect(admission).toMatchObject({ destinations: ['TREE'], connections: 1 });
    expect(admission.options).toEqual({ 'portal.maxConnections': '3', 'portal.getPathPermRegex': 'TREE/.*' });
    expect(await repo.admission('nobody', now)).toEqual({
      options: {},
      destinations: [],
      permissions: [],
      connections: 0,
    });
    await repo.closeConnection(opened!);
  });

  it('counts a user at its connection limit across servers, and lets a lapsed connection go', async () => {
    const repo = h.ports.repos.portal;
    const open = (server: string, at = now) =>
      repo.openConnection({ userId: 'bob', server, protocol: 'https', max: 2, now: at, leaseMs: 60_000 });
    const [one, two, three] = await Promise.all([open('s1'), open('s2'), open('s1')]);
    expect([one, two, three].filter((id) => id === null)).toHaveLength(1);
    expect(await repo.connections('bob', now)).toBe(2);
    await repo.closeConnection((one ?? two)!);
    expect(await open('s2')).not.toBeNull();
    expect(await open('s2', new Date(now.getTime() + 61_000))).not.toBeNull();
  });

  it('opens no more than the limit when many start at once, and any number without a limit', async () => {
    const repo = h.ports.repos.portal;
    const open = (max: number) =>
      repo.openConnection({ userId: 'alice', server: 's1', protocol: 'https', max, now, leaseMs: 60_000 });
    const limited = await Promise.all(Array.from({ length: 30 }, () => open(7)));
    expect(limited.filter((id) => id !== null)).toHaveLength(7);
    expect(new Set(limited.filter((id) => id !== null)).size).toBe(7);
    const unlimited = await Promise.all(Array.from({ length: 10 }, () => open(-1)));
    expect(unlimited.every((id) => typeof id === 'number')).toBe(true);
    expect(await repo.connections('alice', now)).toBe(17);
    for (const id of [...limited, ...unlimited]) if (id !== null) await repo.closeConnection(id);
    expect(await repo.connections('alice', now)).toBe(0);
  });

  it("ends a transfer in one statement: its connection closed, its bytes added to the minute's traffic", async () => {
    const repo = h.ports.repos.portal;
    const minute = new Date('2026-11-26T08:30:00Z');
    const open = () =>
      repo.openConnection({ userId: 'carol', server: 's1', protocol: 'sftp', max: 5, now, leaseMs: 60_000 });
    const [first, second] = [await open(), await open()];
    expect(await repo.connections('carol', now)).toBe(2);
    await repo.endConnection(first!, { userId: 'carol', minute, protocol: 'sftp', ...traffic(10, 0, 1, 0) });
    expect(await repo.connections('carol', now)).toBe(1);
    await repo.endConnection(second!, { userId: 'carol', minute, protocol: 'sftp', ...traffic(5, 7, 0, 1) });
    expect(await repo.connections('carol', now)).toBe(0);
    expect(await repo.trafficSince('carol', minute)).toEqual(traffic(15, 7, 1, 1));
  });

  it('adds traffic per user and minute and sums it over a period', async () => {
    const repo = h.ports.repos.portal;
    const minute = new Date('2026-11-27T11:59:00Z');
    await repo.addTraffic('bob', minute, 'https', { downloadBytes: 10, uploadBytes: 0, downloads: 1, uploads: 0 });
    await repo.addTraffic('bob', minute, 'https', { downloadBytes: 5, uploadBytes: 7, downloads: 1, uploads: 1 });
    await repo.addTraffic('bob', new Date('2026-11-27T10:00:00Z'), 'https', {
      downloadBytes: 100,
      uploadBytes: 0,
      downloads: 1,
      uploads: 0,
    });
    expect(await repo.trafficSince('bob', new Date('2026-11-27T11:00:00Z'))).toEqual({
      downloadBytes: 15,
      uploadBytes: 7,
      downloads: 2,
      uploads: 1,
    });
    expect((await repo.trafficSeries('bob', new Date('2026-11-27T00:00:00Z'))).map((t) => t.downloadBytes)).toEqual([
      100, 15,
    ]);
  });

  it('refuses a second subscriber with the same e-mail in any case, and uses a token once', async () => {
    const repo = h.ports.repos.portal;
    const expires = new Date(now.getTime() + 24 * hour);
    const base = { userId: 'alice', name: 'Ann', iso: 'gb', tokenExpiresAt: expires };
    const id = await repo.addSubscriber({ ...base, email: 'ann@example.org', tokenHash: 't1' }, now);
    expect(id).not.toBeNull();
    expect(await repo.addSubscriber({ ...base, email: 'ANN@example.org', tokenHash: 't2' }, now)).toBeNull();
    expect((await repo.subscriberByToken('t1'))?.id).toBe(id);
    const verify = () =>
      repo.changeSubscriber(id!, ['unverified'], { status: 'active', at: now, passwordHash: 'p1', clearToken: true });
    expect(await Promise.all([verify(), verify()])).toEqual(expect.arrayContaining([true, false]));
    expect(await repo.subscriberByToken('t1')).toBeNull();
    expect((await repo.activeSubscriberByPassword('alice', 'p1'))?.email).toBe('ann@example.org');
    expect(await repo.activeSubscriberByPassword('bob', 'p1')).toBeNull();
    expect(await repo.changeSubscriber(id!, ['active'], { status: 'revoked', at: now })).toBe(true);
    expect(await repo.activeSubscriberByPassword('alice', 'p1')).toBeNull();
  });
});

const traffic = (downloadBytes: number, uploadBytes: number, downloads: number, uploads: number) => ({
  downloadBytes,
  uploadBytes,
  downloads,
  uploads,
});

import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dataTransfers, destinations } from '../../../db/schema.ts';
import { basic } from '../../support/harness.ts';
import { scaled } from '../../support/time.ts';
import { incomingUser, type PortalScene, portalScene, putFile } from '../support.ts';

/**
 * A folder's page gives each folder its files at any depth, as the user sees them (not deleted or
 * expired ones, nor others' held uploads), one per path, counted up to 1,000 ("1,000+ files"
 * beyond); only on the HTML page, and only to a user who sees sizes. The JSON and CSV listings stay
 * as they were, and do not count.
 */
let s: PortalScene;
const ALICE = basic('alice', 'Secret-1');
const BOB = basic('bob', 'Secret-2');
const PLAIN = basic('plain', 'Secret-3');

/** `count` files below `folder` of COUNT, registered in one statement. */
async function manyFiles(folder: string, count: number) {
  await s.h.db.execute(sql`
    with f as (
      insert into data_files (source, size, registered_by, created_at)
      select ${`/${folder}/`} || g, 1, 'test', now() from generate_series(1, ${count}::int) g
      returning id, source)
    insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at, expires_at)
    select id, 'COUNT', ${`${folder}/`} || (regexp_match(source, '[0-9]+$'))[1] || '.bin', 99, 'DONE',
      now() - interval '1 hour', now() + interval '1 day'
    from f`);
}

beforeAll(async () => {
  s = await portalScene();
  const { h, admin } = s;
  for (const d of ['COUNT', 'HELD']) await h.addDestination(d);
  await h.db.update(destinations).set({ data: 'incoming.standby = "yes"' }).where(eq(destinations.name, 'HELD'));
  await incomingUser(h, admin, { id: 'alice', password: 'Secret-1' }, ['COUNT', 'HELD']);
  await incomingUser(h, admin, { id: 'bob', password: 'Secret-2', grant: ['put'] }, ['HELD']);
  await incomingUser(h, admin, { id: 'plain', password: 'Secret-3' }, ['COUNT']);
  await h.ports.repos.portal.revoke('plain', ['size']);
  for (const target of ['top.txt', 'a/one.bin', 'a/b/two.bin', 'a/b/c/three.bin', 'c/kept.bin', 'c/old.bin']) {
    await putFile(h, admin, s.sources, 'COUNT', target, Buffer.from(`${target}\n`));
  }
  // A second transfer of one path (another unique name): still one file.
  await h.db.execute(sql`
    with f as (insert into data_files (source, size, registered_by, created_at)
      values ('/again/one.bin', 6, 'test', now()) returning id)
    insert into data_transfers (data_file_id, destination, target, unique_name, priority, status, scheduled_at,
      expires_at)
    select id, 'COUNT', 'a/one.bin', 'again', 99, 'DONE', now() - interval '1 hour', now() + interval '1 day' from f`);
  const gone = await putFile(h, admin, s.sources, 'COUNT', 'c/gone.bin', Buffer.from('gone\n'));
  const del = await h.call('DELETE', `/v1/datafile/del?id=${gone.id}`, { auth: admin });
  expect(del.status, del.text).toBe(200);
  await h.db
    .update(dataTransfers)
    .set({ expiresAt: new Date(Date.now() - 60_000) })
    .where(and(eq(dataTransfers.destination, 'COUNT'), eq(dataTransfers.target, 'c/old.bin')));
  await manyFiles('exact', 1000);
  await manyFiles('many', 1001);
  // HELD: one file for everyone, and Bob's upload, held (standby) out of others' sight.
  await putFile(h, admin, s.sources, 'HELD', 'in/seen.txt', Buffer.from('seen\n'));
  const put = await h.call('PUT', '/portal/data/HELD/in/bob.txt', {
    auth: BOB,
    body: 'bob\n',
    headers: { 'content-type': 'application/octet-stream' },
  });
  expect(put.status, put.text).toBe(201);
}, scaled(60_000));
afterAll(() => s?.close());

/** The size cell of each row of a page: its text and title. */
async function sizes(auth: string, path: string) {
  const r = await s.h.call('GET', `/portal/data/${path}`, { auth, headers: { accept: 'text/html' } });
  expect(r.status, r.text).toBe(200);
  const cells: Record<string, { text: string; title: string | null; files: string | null }> = {};
  for (const [, name, attributes, text] of r.text.matchAll(
    /<tr data-name="([^"]*)"[^>]*>.*?<td class="size[^"]*"([^>]*)>([^<]*)<\/td>/gs,
  )) {
    cells[name!] = {
      text: text!,
      title: /title="([^"]*)"/.exec(attributes!)?.[1] ?? null,
      files: /data-files="([^"]*)"/.exec(attributes!)?.[1] ?? null,
    };
  }
  return cells;
}
const texts = (cells: Awaited<ReturnType<typeof sizes>>) =>
  Object.fromEntries(Object.entries(cells).map(([name, cell]) => [name, cell.text]));

describe("a folder's count of files on its page", () => {
  it('counts the files shown at any depth, each path once, not deleted or expired ones', async () => {
    const cells = await sizes(ALICE, 'COUNT/');
    expect(texts(cells)).toEqual({
      a: '3 files',
      c: '1 file',
      exact: '1,000 files',
      many: '1,000+ files',
      'top.txt': '8 B',
    });
    expect(cells.a).toEqual({ text: '3 files', title: '3 files here and below', files: '3' });
    expect(cells.c!.title).toBe('1 file here and below');
    expect(cells.exact).toEqual({ text: '1,000 files', title: '1,000 files here and below', files: '1000' });
    expect(cells.many).toEqual({ text: '1,000+ files', title: 'More than 1,000 files here and below', files: '1000+' });
    expect(texts(await sizes(ALICE, 'COUNT/a/'))).toEqual({ b: '2 files', 'one.bin': '6 B' });
  });

  it("counts the destinations on the root's page", async () => {
    expect(texts(await sizes(ALICE, ''))).toEqual({ COUNT: '1,000+ files', HELD: '1 file' });
    expect(texts(await sizes(BOB, ''))).toEqual({ HELD: '2 files' });
  });

  it('leaves out held uploads of others, counting its uploader its own', async () => {
    expect(texts(await sizes(ALICE, 'HELD/'))).toEqual({ in: '1 file' });
    expect(texts(await sizes(BOB, 'HELD/'))).toEqual({ in: '2 files' });
  });

  it('shows no count to a user who sees no sizes', async () => {
    const cells = await sizes(PLAIN, 'COUNT/');
    expect(texts(cells)).toEqual({ a: '', c: '', exact: '', many: '', 'top.txt': '—' });
    expect(cells.many!.files).toBeNull();
  });

  it('is not counted for the JSON and CSV listings, which stay as they were', async () => {
    const counts = vi.spyOn(s.h.ports.repos.portal, 'folderCounts');
    try {
      const json = await s.h.call('GET', '/portal/data/COUNT/', {
        auth: ALICE,
        headers: { accept: 'application/json' },
      });
      expect(json.status).toBe(200);
      const rows = json.json as Array<Record<string, unknown>>;
      expect(rows.find((r) => r.name === 'many')).toEqual({
        name: 'many',
        type: 'directory',
        size: null,
        lastModified: expect.any(String),
      });
      expect(rows.every((r) => Object.keys(r).join() === 'name,type,size,lastModified')).toBe(true);
      const csv = await s.h.call('GET', '/portal/data/COUNT/', { auth: ALICE, headers: { accept: 'text/csv' } });
      expect(csv.text.split('\r\n')[0]).toBe('name,type,size,lastModified');
      expect(csv.text).toMatch(/\r\nmany,directory,,\d{4}-/);
      expect(counts).not.toHaveBeenCalled();
      await sizes(ALICE, 'COUNT/');
      expect(counts).toHaveBeenCalledTimes(1);
    } finally {
      counts.mockRestore();
    }
  });
});

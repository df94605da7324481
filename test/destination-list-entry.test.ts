import { eq, sql } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SerializedAnswer } from '../core/common/operation.ts';
import { destinationView } from '../core/destinations/model.ts';
import { createViewCache } from '../core/destinations/view-cache.ts';
import { destinations, listVersions } from '../db/schema.ts';
import { createHarness, type Harness } from './support/harness.ts';

/**
 * destination/list is rendered by the database from a list entry a trigger keeps (migration
 * 0007). It must be byte for byte what JSON.stringify(destinationView(row)) gives, for any
 * text a destination can hold, after inserts and after updates.
 */
let h: Harness;
let admin: string;
beforeAll(async () => {
  h = await createHarness();
  admin = await h.client('admin', ['.*']);
});
afterAll(() => h.close());

// Any text Postgres can store: every code point but NUL, lone surrogates excluded by fast-check's
// string units; quotes, backslashes, control characters, U+2028 and astral characters included.
const storable = fc
  .string({
    unit: fc.oneof(
      fc.constantFrom('"', '\\', '\n', '\t', '\u0001', '\u001f', '\u007f', '\u2028', '/', '😀', 'é'),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
    ),
    maxLength: 24,
  })
  .map((s) => s.replaceAll('\u0000', ''));
const optional = fc.option(storable, { nil: null });

async function entryOf(name: string) {
  const [row] = await h.db
    .select({ entry: destinations.listEntry })
    .from(destinations)
    .where(eq(destinations.name, name));
  return row!.entry;
}

const expected = async (name: string) => JSON.stringify(destinationView((await h.ports.repos.destinations.get(name))!));

describe('the list entry of a destination', () => {
  it('is what JSON.stringify makes of destinationView, for any stored values, after insert and update', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          comment: optional,
          userMail: optional,
          filterName: optional,
          active: fc.boolean(),
          monitor: fc.boolean(),
          backup: fc.boolean(),
          acquisition: fc.boolean(),
          type: fc.constantFrom(0, 1, 2),
          statusCode: fc.oneof(
            storable.filter((s) => s.length > 0),
            fc.constantFrom('INIT', 'WAIT', 'HOLD'),
          ),
          // What the movers write while the destination is started, shown only then.
          schedulerStatus: fc.constantFrom(null, 'EXEC', 'RETR', 'IDLE', 'SCHE'),
        }),
        optional,
        async (values, laterComment) => {
          const name = `prop_${n++}`;
          await h.db.insert(destinations).values({ name, countryIso: 'fr', ...values });
          expect(await entryOf(name)).toBe(await expected(name));
          await h.db
            .update(destinations)
            .set({ comment: laterComment, active: !values.active, countryIso: 'de' })
            .where(eq(destinations.name, name));
          expect(await entryOf(name)).toBe(await expected(name));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('follows a rename and is what the API lists, in name order', async () => {
    await h.db
      .insert(destinations)
      .values({ name: 'zz_before', countryIso: 'gb', type: 1, comment: 'line\nbreak "quoted"' });
    await h.db.update(destinations).set({ name: 'aa_after' }).where(eq(destinations.name, 'zz_before'));
    const reply = await h.call('GET', '/v1/destination/list', { auth: admin });
    expect(reply.status).toBe(200);
    const all = await h.ports.repos.destinations.list({});
    expect(reply.text).toBe(JSON.stringify({ status: 'ok', destinationList: all.map(destinationView) }));
    expect((reply.json as { destinationList: Array<{ name: string }> }).destinationList[0]!.name).toBe('aa_after');
  });

  it('is an empty array when nothing matches', async () => {
    const reply = await h.call('GET', '/v1/destination/list?iso=jp', { auth: admin });
    expect(reply.text).toBe('{"status":"ok","destinationList":[]}');
  });

  it('is filled for destinations that existed before the migration', async () => {
    await h.db.execute(sql`alter table destinations disable trigger destinations_list_entry`);
    try {
      await h.db.insert(destinations).values({ name: 'legacy', countryIso: 'gb', type: 1, comment: 'old' });
      expect(await entryOf('legacy')).toBe('');
    } finally {
      await h.db.execute(sql`alter table destinations enable trigger destinations_list_entry`);
    }
    // The migration's own backfill statement.
    await h.db.execute(sql`update destinations set list_entry = ''`);
    expect(await entryOf('legacy')).toBe(await expected('legacy'));
  });
});

describe('the rendered list kept with its version', () => {
  const names = async (path = '/v1/destination/list') =>
    (
      (await h.call('GET', path, { auth: admin })).json as { destinationList: Array<{ name: string }> }
    ).destinationList.map((d) => d.name);
  const version = async () => Number((await h.db.select({ v: listVersions.version }).from(listVersions))[0]!.v);

  it('is not rendered again while nothing changed, and is after any change', async () => {
    const repo = h.ports.repos.destinations;
    const original = repo.listView.bind(repo);
    const rendered: boolean[] = [];
    repo.listView = async (filter, known) => {
      const out = await original(filter, known);
      rendered.push(out.view !== null);
      return out;
    };
    try {
      const first = await names();
      expect(await names()).toEqual(first);
      expect(rendered.at(-1)).toBe(false);

      await h.db.insert(destinations).values({ name: 'cache_new', countryIso: 'gb', type: 1 });
      expect(await names()).toContain('cache_new');
      expect(rendered.at(-1)).toBe(true);
      expect(await names()).toContain('cache_new');
      expect(rendered.at(-1)).toBe(false);

      await h.db.update(destinations).set({ comment: 'changed' }).where(eq(destinations.name, 'cache_new'));
      const entry = (
        (await h.call('GET', '/v1/destination/list', { auth: admin })).json as {
          destinationList: Array<{ name: string; comment: string | null }>;
        }
      ).destinationList.find((d) => d.name === 'cache_new');
      expect(entry?.comment).toBe('changed');

      await h.db.delete(destinations).where(eq(destinations.name, 'cache_new'));
      expect(await names()).not.toContain('cache_new');
    } finally {
      repo.listView = original;
    }
  });

  it('follows associations for the list of one incoming user', async () => {
    await h.db.insert(destinations).values({ name: 'assoc_dest', countryIso: 'gb', type: 1 });
    expect(
      (
        await h.call('POST', '/v1/incoming/user/add2?id=cacheuser&email=c%40example.org&iso=gb&active=true', {
          auth: admin,
        })
      ).status,
    ).toBe(200);
    expect(await names('/v1/destination/list?id=cacheuser')).toEqual([]);
    expect(
      (await h.call('POST', '/v1/incoming/association/add?id=cacheuser&destination=assoc_dest', { auth: admin }))
        .status,
    ).toBe(200);
    expect(await names('/v1/destination/list?id=cacheuser')).toEqual(['assoc_dest']);
    expect(
      (await h.call('DELETE', '/v1/incoming/association/del?id=cacheuser&destination=assoc_dest', { auth: admin }))
        .status,
    ).toBe(200);
    expect(await names('/v1/destination/list?id=cacheuser')).toEqual([]);
  });

  it('moves once per committed transaction, however many rows it changed, and not for a rolled back one', async () => {
    const before = await version();
    await h.db.transaction(async (tx) => {
      await tx.insert(destinations).values([
        { name: 'bulk_1', countryIso: 'gb', type: 1 },
        { name: 'bulk_2', countryIso: 'gb', type: 1 },
      ]);
      await tx.update(destinations).set({ comment: 'bulk' }).where(eq(destinations.name, 'bulk_1'));
    });
    expect(await version()).toBe(before + 1);
    await expect(
      h.db.transaction(async (tx) => {
        await tx.insert(destinations).values({ name: 'bulk_3', countryIso: 'gb', type: 1 });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await version()).toBe(before + 1);
    expect(await names()).toEqual(expect.arrayContaining(['bulk_1', 'bulk_2']));
    expect(await names()).not.toContain('bulk_3');
  });
});

describe('createViewCache', () => {
  const view = (n: number) => ({ version: 1, answer: new SerializedAnswer(new Uint8Array(n)) });

  it('keeps entries within its bound, dropping the oldest first, and never one larger than the bound', () => {
    const cache = createViewCache(10);
    cache.set('a', view(4));
    cache.set('b', view(4));
    cache.set('c', view(4));
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('b')?.answer.body).toHaveLength(4);
    cache.set('b', view(6)); // replacing frees the old size first
    expect(cache.get('c')).toBeDefined();
    expect(cache.get('b')?.answer.body).toHaveLength(6);
    cache.set('huge', view(11));
    expect(cache.get('huge')).toBeUndefined();
  });

  it('drops the least recently read list first, not the oldest one', () => {
    const cache = createViewCache(10);
    cache.set('a', view(4));
    cache.set('b', view(4));
    expect(cache.get('a')).toBeDefined();
    cache.set('c', view(4));
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBeDefined();
    expect(cache.get('c')).toBeDefined();
  });
});

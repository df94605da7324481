import { and, asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FieldDefinitionInput, importFields } from '../core/metadata/fields.ts';
import type { Repositories } from '../core/ports.ts';
import { destinations, metadataFields, metadataValues } from '../db/schema.ts';
import { createHarness, type Harness } from './support/harness.ts';

const DEFINITIONS: FieldDefinitionInput[] = [
  { name: 'summary', label: 'Summary', type: 'text', category: 'General', tooltip: 'One line', position: 1 },
  { name: 'notes', label: 'Notes', type: 'textarea', category: 'General', position: 2 },
  { name: 'doc', label: 'Documentation', type: 'markdown', category: 'General', position: 3 },
  { name: 'site', label: 'Web site', type: 'url', category: 'General', position: 4 },
  { name: 'mail', label: 'E-mail', type: 'email', category: 'General', position: 5 },
  { name: 'phones', label: 'Phones', type: 'phone', category: 'General', maxOccurs: 3, position: 6 },
  { name: 'region', label: 'Region', type: 'text', category: 'General', defaultValue: 'EU', position: 7 },
  { name: 'retired', label: 'Retired', type: 'text', category: 'General', active: false, position: 8 },
  { name: 'owner', label: 'Owner', type: 'contact', category: 'Contacts', position: 1 },
  { name: 'contacts', label: 'Contacts', type: 'contact', category: 'Contacts', maxOccurs: -1, position: 2 },
  { name: 'group', label: 'Group', type: 'mail-group', category: 'Contacts', position: 3 },
  { name: 'board', label: 'Switchboard', type: 'switchboard', category: 'Contacts', position: 4 },
  { name: 'secret', label: 'Secret', type: 'password', category: 'Security', defaultValue: 'pw-default', position: 1 },
  {
    name: 'locked',
    label: 'Policy',
    type: 'text',
    category: 'Security',
    defaultValue: 'fixed v1',
    editable: false,
    position: 2,
  },
];
const LOCKED = DEFINITIONS.find((d) => d.name === 'locked')!;

let h: Harness;
// admin: `.*` (so showSensitiveInfo too); reader: the three metadata services only;
// sensitive: the read services plus an explicit showSensitiveInfo; onlySensitive: nothing else.
let admin: string, reader: string, sensitive: string, onlySensitive: string;
let ids: Record<string, number>;
beforeAll(async () => {
  h = await createHarness();
  admin = await h.client('admin', ['.*']);
  reader = await h.client('reader', [
    'getDestinationMetaFields|getDestinationMetaValuesByDestination|setDestinationMetaValues',
  ]);
  sensitive = await h.client('sensitive', ['getDestinationMeta.*', 'showSensitiveInfo']);
  onlySensitive = await h.client('onlysensitive', ['showSensitiveInfo']);
  await h.addDestination('early'); // exists before the fields: seeded by the import
  await importFields(h.ports, 'test', DEFINITIONS);
  ids = Object.fromEntries((await h.db.select().from(metadataFields)).map((f) => [f.name, f.id]));
});
afterAll(() => h.close());

type Body = Record<string, any>;
const restore = async (name: string) => {
  const body = { backup: { destinations: [{ destination: { name, countryIso: 'fr', type: 1 }, associations: [] }] } };
  expect((await h.call('PUT', '/v1/destination/backup', { auth: admin, body })).json.status).toBe('ok');
};
const expectOk = <T extends { status: number }>(r: T) => (expect(r.status).toBe(200), r);
const get = async (name: string, auth = admin) =>
  expectOk(await h.call('GET', `/v1/destination/${name}/metadata`, { auth })).json;
const put = (name: string, body: unknown, auth = admin) =>
  h.call('PUT', `/v1/destination/${name}/metadata`, { auth, body });
/** PUTs, expects success and answers the `count` of the response. */
const putOk = async (name: string, body: Body, auth = admin) => {
  const { json } = expectOk(await put(name, body, auth));
  expect(json).toMatchObject({ success: 'yes', destination: name });
  return json.count as number;
};
const rows = (name: string) =>
  h.db
    .select()
    .from(metadataValues)
    .where(eq(metadataValues.destination, name))
    .orderBy(asc(metadataValues.fieldId), asc(metadataValues.position));
const error = (message: string) => JSON.stringify({ status: 'error', message });
const EMPTY = {
  Contacts: { owner: null, contacts: null, group: null, board: null },
  General: { summary: null, notes: null, doc: null, site: null, mail: null, phones: null, region: 'EU' },
  Security: { secret: 'pw-default', locked: 'fixed v1' },
};
const flags = (on: string[] = []) =>
  Object.fromEntries(
    Object.entries(EMPTY).map(([c, g]) => [c, Object.fromEntries(Object.keys(g).map((f) => [f, on.includes(f)]))]),
  );
const MD = '# Title\n\n<script>alert(1)</script> **bold** | a | b |\n|---|---|';

describe('GET /v1/destination/metadata/fields', () => {
  it('lists the active definitions only, with success yes', async () => {
    const r = await h.call('GET', '/v1/destination/metadata/fields', { auth: admin });
    expect(r.status).toBe(200);
    expect(Object.keys(r.json)).toEqual(['success', 'fields']);
    expect(r.json.success).toBe('yes');
    const byName = Object.fromEntries(r.json.fields.map((f: Body) => [f.name, f]));
    expect(r.json.fields.map((f: Body) => f.name)).toEqual([
      'owner',
      'contacts',
      'group',
      'board',
      'summary',
      'notes',
      'doc',
      'site',
      'mail',
      'phones',
      'region',
      'secret',
      'locked',
    ]);
    expect(Object.keys(byName.summary)).toEqual([
      'id',
      'name',
      'label',
      'type',
      'category',
      'tooltip',
      'defaultValue',
      'editable',
      'maxOccurs',
      'position',
      'active',
    ]);
    expect(byName.summary).toEqual({
      id: ids.summary,
      name: 'summary',
      label: 'Summary',
      type: 'text',
      category: 'General',
      tooltip: 'One line',
      defaultValue: null,
      editable: true,
      maxOccurs: 1,
      position: 1,
      active: true,
    });
    expect(byName.locked).toMatchObject({ editable: false, defaultValue: 'fixed v1', tooltip: null });
    expect([byName.owner.maxOccurs, byName.contacts.maxOccurs, byName.phones.maxOccurs]).toEqual([1, -1, -1]);
  });

  it('shows a password default only with showSensitiveInfo; it is stored sealed', async () => {
    const secretOf = async (auth: string) =>
      (await h.call('GET', '/v1/destination/metadata/fields', { auth })).json.fields.find(
        (f: Body) => f.name === 'secret',
      );
    expect((await secretOf(reader)).defaultValue).toBeNull();
    expect((await secretOf(admin)).defaultValue).toBe('pw-default');
    const [row] = await h.db.select().from(metadataFields).where(eq(metadataFields.name, 'secret'));
    expect(row!.defaultValue).not.toContain('pw-default');
  });
});

describe('GET /v1/destination/{name}/metadata', () => {
  it('shows every visible field, null where there is no value (rule 1)', async () => {
    await restore('g1');
    const r = await h.call('GET', '/v1/destination/g1/metadata', { auth: admin });
    expect(Object.keys(r.json)).toEqual(['success', 'destination', 'exportedAt', 'metadata', 'includeInNotes']);
    expect(r.json).toEqual({
      success: 'yes',
      destination: 'g1',
      exportedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      metadata: EMPTY,
      includeInNotes: flags(),
    });
    expect(Math.abs(Date.parse(r.json.exportedAt) - Date.now())).toBeLessThan(60_000);
  });

  it('answers arrays for multi-value fields, objects for structured types, raw markdown (rules 2, 4)', async () => {
    await restore('g2');
    const ann = { name: 'Ann', email: 'ann@example.org', phone: null, fax: null };
    await putOk('g2', {
      metadata: {
        General: { summary: 'S', doc: MD, phones: '+44 1', region: null },
        Contacts: {
          owner: { name: 'Ann', email: 'ann@example.org' },
          contacts: [ann, { fax: '12' }],
          group: { name: 'G', email: 'g@example.org' },
          board: { phone: '99' },
        },
      },
    });
    const { metadata } = await get('g2');
    expect(metadata.General).toEqual({ ...EMPTY.General, summary: 'S', doc: MD, phones: ['+44 1'], region: null });
    expect(metadata.Contacts).toEqual({
      owner: ann,
      contacts: [ann, { name: null, email: null, phone: null, fax: '12' }],
      group: { name: 'G', email: 'g@example.org' },
      board: { name: null, phone: '99' },
    });
  });

  it('a locked field shows the current default, also after importFields changes it (rule 3)', async () => {
    await restore('g3');
    await putOk('g3', { metadata: { Security: { locked: 'mine' } } });
    expect((await get('g3')).metadata.Security.locked).toBe('fixed v1');
    try {
      await importFields(h.ports, 'test', [{ ...LOCKED, defaultValue: 'fixed v2' }]);
      expect((await get('g3')).metadata.Security.locked).toBe('fixed v2');
      expect((await get('early', reader)).metadata.Security.locked).toBe('fixed v2');
    } finally {
      await importFields(h.ports, 'test', [LOCKED]);
    }
    expect((await get('g3')).metadata.Security.locked).toBe('fixed v1');
  });

  it('omits password fields entirely without showSensitiveInfo (rule 5)', async () => {
    await restore('g4');
    const r = await h.call('GET', '/v1/destination/g4/metadata', { auth: reader });
    expect(r.json.metadata).toEqual({ ...EMPTY, Security: { locked: 'fixed v1' } });
    expect(r.json.includeInNotes.Security).toEqual({ locked: false });
    expect(r.text).not.toMatch(/secret|pw-default/);
  });

  it('names a missing destination and needs its permission', async () => {
    expect((await h.call('GET', '/v1/destination/nowhere/metadata', { auth: admin })).text).toBe(
      error('Destination nowhere not found'),
    );
    expect((await h.call('GET', '/v1/destination/g1/metadata', { auth: onlySensitive })).text).toBe(
      error('User not authorized'),
    );
  });
});

describe('PUT /v1/destination/{name}/metadata', () => {
  it('answers success yes, the destination and the number of values stored', async () => {
    await restore('p1');
    const r = await put('p1', {
      metadata: { General: { summary: 'x', phones: ['1', '2'] }, Contacts: { owner: { name: 'A' } } },
    });
    expect(r.text).toBe('{"success":"yes","destination":"p1","count":4}');
    expect(await rows('p1')).toHaveLength(4);
  });

  it('replaces every value; null or omitted fields store nothing (rules 1, 2)', async () => {
    await restore('p2');
    await putOk('p2', { metadata: { General: { summary: 'one', notes: 'n' }, Security: { secret: 's1' } } });
    expect(await putOk('p2', { metadata: { General: { notes: 'two', summary: null } } })).toBe(1);
    const { metadata } = await get('p2');
    expect(metadata).toEqual({
      ...EMPTY,
      General: { ...EMPTY.General, notes: 'two', region: null },
      Security: { secret: null, locked: 'fixed v1' },
    });
    expect((await rows('p2')).map((r) => r.fieldId)).toEqual([ids.notes]);
  });

  it('ignores and logs a value for a locked field, whatever its shape (rule 3)', async () => {
    await restore('p3');
    for (const locked of ['mine', ['a', 'b'], { not: 'text' }]) {
      const r = await put('p3', { metadata: { Security: { locked }, General: { summary: 's' } } });
      expect(r.json).toEqual({ success: 'yes', destination: 'p3', count: 1 });
    }
    const logged = h.logLines
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'value of a locked metadata field ignored' && l.destination === 'p3');
    expect(logged).toHaveLength(3);
    expect(logged[0]).toMatchObject({ level: 'info', destination: 'p3', field: 'locked' });
    expect((await get('p3')).metadata.Security.locked).toBe('fixed v1');
    expect((await rows('p3')).map((r) => r.fieldId)).toEqual([ids.summary]);
  });

  it('includeInNotes: absent names false, omitting it clears all, locked fields may be flagged (rule 4)', async () => {
    await restore('p4');
    const metadata = { General: { summary: 's' } };
    await putOk('p4', {
      metadata,
      includeInNotes: { General: { summary: true, notes: false }, Security: { locked: true, secret: true } },
    });
    expect((await get('p4')).includeInNotes).toEqual(flags(['summary', 'locked', 'secret']));
    await putOk('p4', { metadata, includeInNotes: { Anything: { doc: true } } });
    expect((await get('p4')).includeInNotes).toEqual(flags(['doc']));
    await putOk('p4', { metadata });
    expect((await get('p4')).includeInNotes).toEqual(flags());
  });

  it('a GET sent back unchanged leaves the GET unchanged (rule 5)', async () => {
    await restore('p5');
    await putOk('p5', {
      metadata: {
        General: { summary: 's', doc: MD, phones: ['1', '2'] },
        Contacts: { contacts: [{ name: 'C' }] },
        Security: { secret: 'top' },
      },
      includeInNotes: { General: { doc: true }, Security: { locked: true } },
    });
    for (const auth of [admin, reader]) {
      const before = await get('p5', auth);
      await putOk('p5', before, auth);
      const after = await get('p5', auth);
      expect({ ...after, exportedAt: null }).toEqual({ ...before, exportedAt: null });
    }
    expect((await get('p5')).metadata.Security.secret).toBe('top');
  });

  it('refuses an unknown or inactive field name, naming it, and stores nothing', async () => {
    await restore('p6');
    await putOk('p6', { metadata: { Elsewhere: { summary: 'kept' } } }); // the category key is not used for the lookup
    const before = await rows('p6');
    for (const name of ['bogus', 'retired']) {
      const r = await put('p6', { metadata: { General: { summary: 'new', [name]: 'x' } } });
      expect(r.status).toBe(500);
      expect(r.json.status).toBe('error');
      expect(r.json.message).toContain(name);
      const flagged = await put('p6', { metadata: {}, includeInNotes: { General: { [name]: true } } });
      expect(flagged.json.message).toContain(name);
    }
    expect(await rows('p6')).toEqual(before);
  });

  it('checks the number of values of a field', async () => {
    await restore('p7');
    const two = await put('p7', { metadata: { General: { summary: ['a', 'b'] } } });
    expect(two.status).toBe(500);
    expect(two.json).toEqual({ status: 'error', message: expect.stringContaining('summary') });
    expect((await put('p7', { metadata: { General: { phones: ['1', '2', '3', '4'] } } })).json.message).toContain(
      'phones',
    );
    await putOk('p7', { metadata: { General: { summary: ['only'] } } });
    expect((await get('p7')).metadata.General.summary).toBe('only');
  });

  it('trims strings; a blank string or an all-empty object is no value; well-formed addresses pass', async () => {
    await restore('p8');
    const count = await putOk('p8', {
      metadata: {
        General: {
          summary: '  padded  ',
          notes: '   ',
          phones: [' 1 ', '', '  '],
          mail: ' ops@example.org ',
          site: 'https://example.org/a?b=c',
        },
        Contacts: {
          owner: { name: ' ', email: '', phone: null },
          group: { name: ' G ' },
          contacts: [{}, { name: 'N' }],
        },
      },
    });
    expect(count).toBe(6);
    const { metadata } = await get('p8');
    expect(metadata.General).toMatchObject({
      summary: 'padded',
      notes: null,
      phones: ['1'],
      mail: 'ops@example.org',
      site: 'https://example.org/a?b=c',
    });
    expect(metadata.Contacts).toEqual({
      owner: null,
      contacts: [{ name: 'N', email: null, phone: null, fax: null }],
      group: { name: 'G', email: null },
      board: null,
    });
  });

  it.each([
    ['an unknown key of a structured value', { Contacts: { owner: { name: 'A', mobile: '1' } } }, 'owner'],
    ['a structured value that is not an object', { Contacts: { board: 'text' } }, 'board'],
    ['a malformed e-mail address', { General: { mail: 'not-an-address' } }, 'mail'],
    ['a malformed URL', { General: { site: 'www.example.org' } }, 'site'],
    ['a number for a text field', { General: { summary: 42 } }, 'summary'],
  ])('refuses %s, naming the field', async (_, metadata, field) => {
    await restore('p9');
    await putOk('p9', { metadata: { General: { summary: 'kept' } } });
    const r = await put('p9', { metadata });
    expect(r.status).toBe(500);
    expect(r.json.message).toContain(field);
    expect((await get('p9')).metadata.General.summary).toBe('kept');
  });

  it('names a missing destination', async () => {
    expect((await put('nowhere', { metadata: { General: { summary: 'x' } } })).text).toBe(
      error('Destination nowhere not found'),
    );
  });

  it.each([[{}], [{ metadata: [] }], [{ metadata: 'x' }], [{ metadata: null }], [[1]], ['"text"']])(
    'refuses a body without a metadata object: %j',
    async (body) => {
      const r = await put('g1', body);
      expect(r.status).toBe(500);
      expect(r.text).toBe(error("Request body must contain a 'metadata' object grouped by category"));
    },
  );

  it('keeps the stored password values when the caller cannot see them', async () => {
    await restore('p11');
    await putOk('p11', {
      metadata: { Security: { secret: 'kept-pw' } },
      includeInNotes: { Security: { secret: true } },
    });
    await putOk('p11', { metadata: { General: { summary: 'by reader' }, Security: { secret: 'ignored' } } }, reader);
    const seen = await get('p11', sensitive);
    expect(seen.metadata.General.summary).toBe('by reader');
    expect(seen.metadata.Security.secret).toBe('kept-pw');
    expect(seen.includeInNotes.Security.secret).toBe(true);
  });

  it('stores password values sealed, never in clear', async () => {
    await restore('p12');
    await putOk('p12', { metadata: { Security: { secret: 'clear-text-pw' } } });
    const [row] = (await rows('p12')).filter((r) => r.fieldId === ids.secret);
    expect(row!.value).not.toContain('clear-text-pw');
    expect(await h.ports.secrets.decrypt(row!.value)).toBe('clear-text-pw');
    expect((await get('p12')).metadata.Security.secret).toBe('clear-text-pw');
  });

  it('is one transaction: a failure after the values were replaced leaves everything as it was', async () => {
    await restore('t1');
    await putOk('t1', {
      metadata: { General: { summary: 'before', phones: ['1'] } },
      includeInNotes: { General: { summary: true } },
    });
    const [beforeRows, beforeGet] = [await rows('t1'), await get('t1')];
    const original = h.ports.repos.transaction;
    let insideTransaction: unknown;
    const failingFlags = (repos: Repositories): Repositories => ({
      ...repos,
      metadata: {
        ...repos.metadata,
        replaceFlags: async () => {
          insideTransaction = await repos.metadata.values('t1');
          throw new Error('flags failed');
        },
      },
    });
    h.ports.repos.transaction = ((work: (r: Repositories) => Promise<unknown>) =>
      original((repos) => work(failingFlags(repos)))) as Repositories['transaction'];
    try {
      const r = await put('t1', { metadata: { General: { summary: 'after' } } });
      expect(r.status).toBe(500);
      expect(r.json.status).toBe('error');
    } finally {
      h.ports.repos.transaction = original;
    }
    expect(insideTransaction).toEqual([{ fieldId: ids.summary, position: 0, value: 'after' }]); // replaceValues ran
    expect(await rows('t1')).toEqual(beforeRows);
    const after = await get('t1');
    expect([after.metadata, after.includeInNotes]).toEqual([beforeGet.metadata, beforeGet.includeInNotes]);
  });
});

describe('sensitive values (spec §2.11, metadata rows)', () => {
  it.each([
    ['.* (implicit showSensitiveInfo)', () => admin, true],
    ['explicit showSensitiveInfo', () => sensitive, true],
    ['no showSensitiveInfo', () => reader, false],
  ])('%s', async (_, auth, reveal) => {
    await restore('s1');
    await putOk('s1', { metadata: { Security: { secret: 'stored-pw' } } });
    const fields = await h.call('GET', '/v1/destination/metadata/fields', { auth: auth() });
    expect(fields.json.fields.find((f: Body) => f.name === 'secret').defaultValue).toBe(reveal ? 'pw-default' : null);
    const values = await get('s1', auth());
    expect('secret' in values.metadata.Security).toBe(reveal);
    if (reveal) expect(values.metadata.Security.secret).toBe('stored-pw');
    else expect(JSON.stringify(values)).not.toMatch(/stored-pw|pw-default/);
  });

  it('showSensitiveInfo alone grants neither endpoint', async () => {
    for (const path of ['/v1/destination/metadata/fields', '/v1/destination/s1/metadata']) {
      expect((await h.call('GET', path, { auth: onlySensitive })).text).toBe(error('User not authorized'));
    }
  });
});

describe('defaults', () => {
  it('seed destinations existing at import and those restored later; password defaults sealed', async () => {
    await restore('late');
    for (const name of ['early', 'late']) {
      const stored = await rows(name);
      expect(stored.map((r) => r.fieldId)).toEqual([ids.region, ids.secret]); // ids in definition order
      expect(stored.find((r) => r.fieldId === ids.secret)!.value).not.toContain('pw-default');
      expect((await get(name)).metadata).toEqual(EMPTY);
    }
  });

  it('a field added later seeds every destination without touching stored values', async () => {
    await importFields(h.ports, 'test', [
      { name: 'tier', label: 'Tier', type: 'text', category: 'General', defaultValue: 'gold', position: 9 },
    ]);
    const [tier] = await h.db.select().from(metadataFields).where(eq(metadataFields.name, 'tier'));
    expect((await get('early')).metadata.General.tier).toBe('gold');
    expect((await get('p2')).metadata.General).toMatchObject({ notes: 'two', tier: 'gold' });
    await restore('later');
    expect((await get('later')).metadata.General.tier).toBe('gold');
    const seeded = await h.db
      .select()
      .from(metadataValues)
      .where(and(eq(metadataValues.fieldId, tier!.id), eq(metadataValues.value, 'gold')));
    expect(seeded).toHaveLength((await h.db.select().from(destinations)).length);
  });

  it('a locked field never stores a value', async () => {
    await importFields(h.ports, 'test', [
      { name: 'frozen', label: 'Frozen', type: 'text', category: 'Security', defaultValue: 'ice', editable: false },
    ]);
    const [frozen] = await h.db.select().from(metadataFields).where(eq(metadataFields.name, 'frozen'));
    await restore('last');
    await putOk('last', { metadata: { Security: { frozen: 'mine', locked: 'mine' } } });
    expect((await get('last')).metadata.Security).toMatchObject({ frozen: 'ice', locked: 'fixed v1' });
    for (const id of [ids.locked!, frozen!.id]) {
      expect(await h.db.select().from(metadataValues).where(eq(metadataValues.fieldId, id))).toEqual([]);
    }
  });
});

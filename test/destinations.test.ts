import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destinations } from '../db/schema.ts';
import { basic, createHarness, type Harness } from './support/harness.ts';

let h: Harness;
let admin: string; // `.*`
let lister: string; // destinationList only
let countryLister: string; // destinationCountryList only
let nobody: string; // a valid client with no permission at all
beforeAll(async () => {
  h = await createHarness();
  admin = await h.client('admin', ['.*']);
  lister = await h.client('lister', ['destinationList']);
  countryLister = await h.client('countries', ['destinationCountryList']);
  nobody = await h.client('nobody', []);
  // Inserted out of name order on purpose.
  await h.db.insert(destinations).values([
    { name: 'gamma', countryIso: 'de', type: 2, active: false, statusCode: 'STOP' },
    {
      name: 'beta',
      countryIso: 'fr',
      type: 1,
      comment: 'Paris feed',
      monitor: true,
      backup: true,
      userMail: 'ops@example.org',
      filterName: 'gzip',
    },
    { name: 'alpha', countryIso: 'gb', type: 0, acquisition: true },
    { name: 'list', countryIso: 'gb', type: 1 },
  ]);
  for (const p of ['id=u1&email=u1@example.org&iso=gb&active=true', 'id=u2&email=u2@example.org&iso=gb&active=true']) {
    expect((await h.call('POST', `/v1/incoming/user/add2?${p}`, { auth: admin })).status).toBe(200);
  }
  for (const d of ['gamma', 'beta']) {
    expect((await h.call('POST', `/v1/incoming/association/add?id=u1&destination=${d}`, { auth: admin })).json).toEqual(
      { status: 'ok' },
    );
  }
});
afterAll(() => h.close());

const error = (message: string) => JSON.stringify({ status: 'error', message });
const record = (name: string, over: Record<string, unknown>) => ({
  name,
  type: 1,
  country: 'gb',
  countryIso: 'gb',
  active: true,
  statusCode: 'INIT',
  backup: false,
  comment: null,
  monitor: false,
  acquisition: false,
  userMail: null,
  filterName: null,
  ...over,
});
const ALPHA = record('alpha', { type: 0, acquisition: true });
const BETA = record('beta', {
  country: 'fr',
  countryIso: 'fr',
  comment: 'Paris feed',
  monitor: true,
  backup: true,
  userMail: 'ops@example.org',
  filterName: 'gzip',
});
const GAMMA = record('gamma', { type: 2, country: 'de', countryIso: 'de', active: false, statusCode: 'STOP' });
const LIST = record('list', {});
const names = async (query: string, auth = lister) => {
  const r = await h.call('GET', `/v1/destination/list${query}`, { auth });
  expect(r.status).toBe(200);
  return r.json.destinationList.map((d: { name: string }) => d.name);
};

describe('GET /v1/destination/list', () => {
  it('lists every destination with the record of wire-decisions §4, ordered by name', async () => {
    const r = await h.call('GET', '/v1/destination/list', { auth: lister });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'ok', destinationList: [ALPHA, BETA, GAMMA, LIST] });
    expect(Object.keys(r.json)).toEqual(['status', 'destinationList']);
    expect(Object.keys(r.json.destinationList[0])).toEqual([
      'name',
      'type',
      'country',
      'countryIso',
      'active',
      'statusCode',
      'backup',
      'comment',
      'monitor',
      'acquisition',
      'userMail',
      'filterName',
    ]);
    expect(r.text).toBe(JSON.stringify(r.json)); // compact single-line JSON
  });

  it('filters by country, case-insensitive on input', async () => {
    expect(await names('?iso=gb')).toEqual(['alpha', 'list']);
    expect(await names('?iso=FR')).toEqual(['beta']);
    expect(await names('?iso=De')).toEqual(['gamma']);
    expect(await names('?iso=it')).toEqual([]);
  });

  it('filters by incoming user: only the destinations associated with that user', async () => {
    expect(await names('?id=u1')).toEqual(['beta', 'gamma']);
    expect(await names('?id=u2')).toEqual([]);
  });

  it('filters by type and combines filters', async () => {
    expect(await names('?type=0')).toEqual(['alpha']);
    expect(await names('?type=1')).toEqual(['beta', 'list']);
    expect(await names('?type=%2B2')).toEqual(['gamma']);
    expect(await names('?iso=gb&type=1')).toEqual(['list']);
    expect(await names('?id=u1&type=2')).toEqual(['gamma']);
    expect(await names('?id=u1&iso=gb')).toEqual([]);
  });

  it('names an unknown country, user or type', async () => {
    const cases: Array<[string, string]> = [
      ['?iso=xx', 'Country xx not found'],
      ['?iso=XX', 'Country xx not found'],
      ['?id=ghost', 'User ghost not found'],
      ['?type=9', 'Type 9 not found'],
      ['?type=-1', 'Type -1 not found'],
    ];
    for (const [query, message] of cases) {
      const r = await h.call('GET', `/v1/destination/list${query}`, { auth: lister });
      expect(r.status).toBe(500);
      expect(r.text).toBe(error(message));
    }
  });

  it('answers 400 for a malformed type or iso and treats an empty filter as omitted', async () => {
    const r = await h.call('GET', '/v1/destination/list?type=abc', { auth: lister });
    expect(r.status).toBe(400);
    expect(r.text).toBe("Invalid value for parameter type: 'abc' (integer expected)");
    expect((await h.call('GET', '/v1/destination/list?type=1.5', { auth: lister })).status).toBe(400);
    const iso = await h.call('GET', '/v1/destination/list?iso=gbr', { auth: lister });
    expect(iso.status).toBe(400);
    expect(iso.text).toContain('parameter iso');
    expect(await names('?iso=&type=')).toEqual(['alpha', 'beta', 'gamma', 'list']);
  });

  it('needs the destinationList permission', async () => {
    for (const auth of [nobody, countryLister, basic('lister', 'wrong')]) {
      const r = await h.call('GET', '/v1/destination/list', { auth });
      expect(r.status).toBe(500);
      expect(r.text).toBe(error('User not authorized'));
    }
    expect((await h.call('GET', '/v1/destination/list')).status).toBe(401);
  });
});

describe('GET /v1/destination/{name}', () => {
  it('answers one destination record under `destination`', async () => {
    const r = await h.call('GET', '/v1/destination/beta', { auth: admin });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'ok', destination: BETA });
    expect(Object.keys(r.json.destination)).toEqual(Object.keys(BETA));
  });

  it('names a destination that does not exist', async () => {
    const r = await h.call('GET', '/v1/destination/nowhere', { auth: admin });
    expect(r.status).toBe(500);
    expect(r.text).toBe(error('Destination nowhere not found'));
  });

  it('is Basic only: a client without permissions may call it, a wrong secret or unknown user may not', async () => {
    expect((await h.call('GET', '/v1/destination/gamma', { auth: nobody })).json).toEqual({
      status: 'ok',
      destination: GAMMA,
    });
    for (const auth of [basic('nobody', 'wrong'), basic('ghost', 'whatever')]) {
      const r = await h.call('GET', '/v1/destination/gamma', { auth });
      expect(r.status).toBe(500);
      expect(r.text).toBe(error('User not authorized'));
    }
    const anonymous = await h.call('GET', '/v1/destination/gamma');
    expect(anonymous.status).toBe(401);
    expect((await h.call('GET', '/v1/destination/gamma', { auth: nobody, scheme: 'http' })).status).toBe(403);
  });
});

describe('GET /v1/destination/type/list', () => {
  const TYPES = '{"status":"ok","typeList":[{"0":"Acquisition"},{"1":"Dissemination"},{"2":"Time Critical"}]}';

  it('answers every type as one-key objects, ordered by position', async () => {
    const r = await h.call('GET', '/v1/destination/type/list', { auth: admin });
    expect(r.status).toBe(200);
    expect(r.text).toBe(TYPES);
  });

  it('is Basic only', async () => {
    expect((await h.call('GET', '/v1/destination/type/list', { auth: nobody })).text).toBe(TYPES);
    const wrong = await h.call('GET', '/v1/destination/type/list', { auth: basic('nobody', 'wrong') });
    expect(wrong.status).toBe(500);
    expect(wrong.text).toBe(error('User not authorized'));
    expect((await h.call('GET', '/v1/destination/type/list')).status).toBe(401);
  });
});

describe('GET /v1/destination/country/list', () => {
  it('answers only the countries that have a destination, as {iso, name} ordered by iso', async () => {
    const r = await h.call('GET', '/v1/destination/country/list', { auth: countryLister });
    expect(r.status).toBe(200);
    expect(r.text).toBe(
      '{"status":"ok","countryList":[{"iso":"de","name":"Germany"},{"iso":"fr","name":"France"},' +
        '{"iso":"gb","name":"United Kingdom"}]}',
    );
  });

  it('follows new destinations, including restored ones', async () => {
    const body = {
      backup: { destinations: [{ destination: { name: 'roma', countryIso: 'it', type: 1 }, associations: [] }] },
    };
    const restored = await h.call('PUT', '/v1/destination/backup', { auth: admin, body });
    expect(restored.json).toEqual({ status: 'ok', message: 'Number of Destination(s) created: 1' });
    const r = await h.call('GET', '/v1/destination/country/list', { auth: countryLister });
    expect(r.json.countryList.map((c: { iso: string }) => c.iso)).toEqual(['de', 'fr', 'gb', 'it']);
    expect(r.json.countryList[3]).toEqual({ iso: 'it', name: 'Italy' });
    expect((await h.call('GET', '/v1/destination/roma', { auth: nobody })).json.destination).toEqual(
      record('roma', { country: 'it', countryIso: 'it' }),
    );
    expect(await names('?iso=IT')).toEqual(['roma']);
  });

  it('needs the destinationCountryList permission', async () => {
    for (const auth of [nobody, lister, basic('countries', 'wrong')]) {
      const r = await h.call('GET', '/v1/destination/country/list', { auth });
      expect(r.status).toBe(500);
      expect(r.text).toBe(error('User not authorized'));
    }
  });
});

describe('routing', () => {
  it('the literal paths win over /v1/destination/{name}', async () => {
    // A destination named `list` exists, yet /v1/destination/list is the list operation.
    const r = await h.call('GET', '/v1/destination/list', { auth: admin });
    expect(r.json.destinationList).toBeDefined();
    expect(r.json.destination).toBeUndefined();
    // The list operation needs its permission; the Basic-only detail would not.
    expect((await h.call('GET', '/v1/destination/list', { auth: nobody })).text).toBe(error('User not authorized'));
    // Same for the other literal words: they are their own operations.
    expect((await h.call('GET', '/v1/destination/country/list', { auth: nobody })).text).toBe(
      error('User not authorized'),
    );
    expect((await h.call('GET', '/v1/destination/backup', { auth: nobody })).text).toBe(error('User not authorized'));
    expect((await h.call('GET', '/v1/destination/metadata/fields', { auth: nobody })).text).toBe(
      error('User not authorized'),
    );
  });

  it('a destination named like a literal path is still reached through the other endpoints', async () => {
    expect(await names('?iso=gb&type=1')).toEqual(['list']);
    const backup = await h.call('GET', '/v1/destination/backup/list', { auth: admin });
    expect(backup.json.backup.destinations.map((d: { destination: { name: string } }) => d.destination.name)).toEqual([
      'list',
    ]);
  });

  it('answers 405 for another method on a destination path', async () => {
    const r = await h.call('DELETE', '/v1/destination/beta', { auth: admin });
    expect(r.status).toBe(405);
  });
});

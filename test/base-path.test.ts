import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../functions/node/config.ts';
import { workerConfig } from '../functions/workers/runtime.ts';
import { createHarness, type Harness, type Reply } from './support/harness.ts';

// The headers a client may act on; x-request-id differs per request by design.
const HEADERS = ['content-type', 'allow', 'www-authenticate', 'content-security-policy'];
const view = (r: Reply) => ({
  status: r.status,
  text: r.text,
  headers: Object.fromEntries(HEADERS.map((name) => [name, r.headers.get(name)])),
});

let h: Harness;
let auth: string;
beforeAll(async () => {
  h = await createHarness();
  auth = await h.client('based', ['destinationCountryList']);
});
afterAll(() => h.close());

describe('the default base path /ecpds (the reference server context)', () => {
  it.each([
    ['GET', '/v1/version', false],
    ['GET', '/v1/destination/country/list', true],
    ['GET', '/v1/destination/country/list', false],
    ['GET', '/v1/destination/NO_SUCH_DEST', true],
    ['GET', '/v1/destination/list', true],
    ['PUT', '/v1/version', false],
    ['GET', '/v1/no/such/operation', false],
    ['GET', '/healthz', false],
  ])('%s /ecpds%s answers exactly as without it (authenticated: %s)', async (method, path, authenticated) => {
    const opts = authenticated ? { auth } : {};
    const root = await h.call(method, path, opts);
    const based = await h.call(method, `/ecpds${path}`, opts);
    expect(view(based)).toEqual(view(root));
  });

  it('covers the answers it claims to: 200, 401, 405, 404 and a refused permission', async () => {
    const codes = async (path: string, opts = {}) => (await h.call('GET', `/ecpds${path}`, opts)).status;
    expect(await codes('/v1/destination/country/list', { auth })).toBe(200);
    expect(await codes('/v1/destination/country/list')).toBe(401);
    expect((await h.call('PUT', '/ecpds/v1/version')).headers.get('allow')).toBe('GET');
    expect(await codes('/v1/no/such/operation')).toBe(404);
    expect((await h.call('GET', '/ecpds/v1/destination/list', { auth })).json.message).toBe('User not authorized');
  });

  it('takes a body through the base path', async () => {
    const writer = await h.client('based-writer', ['.*']);
    await h.addDestination('BASED_DEST');
    const r = await h.call('GET', '/ecpds/v1/destination/backup/BASED_DEST', { auth: writer });
    expect(r.status).toBe(200);
    const body = {
      backup: {
        destinations: [
          { ...r.json.backup.destinations[0], destination: { name: 'BASED_2', countryIso: 'gb', type: 1 } },
        ],
      },
    };
    const put = await h.call('PUT', '/ecpds/v1/destination/backup', { auth: writer, body });
    expect(put.json).toEqual({ status: 'ok', message: 'Number of Destination(s) created: 1' });
    expect((await h.call('GET', '/v1/destination/BASED_2', { auth: writer })).status).toBe(200);
  });

  it('leaves the console at the root only, and only the exact prefix counts', async () => {
    expect((await h.call('GET', '/ecpds/console')).status).toBe(404);
    expect((await h.call('GET', '/ecpdsv1/version')).status).toBe(404);
    expect((await h.call('GET', '/ecpds')).status).toBe(404);
  });

  it('gives each mount an OpenAPI document whose first server is that mount', async () => {
    const root = (await h.call('GET', '/openapi.json')).json;
    const based = (await h.call('GET', '/ecpds/openapi.json')).json;
    expect(root.servers.map((s: { url: string }) => s.url)).toEqual(['/', '/ecpds']);
    expect(based.servers.map((s: { url: string }) => s.url)).toEqual(['/ecpds', '/']);
    expect(based.paths).toEqual(root.paths);
    const page = await h.call('GET', '/ecpds/docs');
    expect(page.status).toBe(200);
    expect(page.text).toContain('doc.servers[0].url');
  });
});

describe('a custom base path, and none', () => {
  it('serves /dds/api besides the root, and no /ecpds', async () => {
    const custom = await createHarness({ basePath: '/dds/api' });
    try {
      expect((await custom.call('GET', '/dds/api/v1/version')).text).toBe(
        (await custom.call('GET', '/v1/version')).text,
      );
      expect((await custom.call('GET', '/ecpds/v1/version')).status).toBe(404);
      const doc = (await custom.call('GET', '/dds/api/openapi.json')).json;
      expect(doc.servers[0].url).toBe('/dds/api');
    } finally {
      await custom.close();
    }
  });

  it('serves the root only when the base path is null', async () => {
    const bare = await createHarness({ basePath: null });
    try {
      expect((await bare.call('GET', '/v1/version')).status).toBe(200);
      expect((await bare.call('GET', '/ecpds/v1/version')).status).toBe(404);
      expect((await bare.call('GET', '/openapi.json')).json.servers).toEqual([{ url: '/', description: 'The root' }]);
    } finally {
      await bare.close();
    }
  });
});

describe('ECPDS_BASE_PATH', () => {
  const workerEnv = (vars: Record<string, unknown>) =>
    ({ HYPERDRIVE: { connectionString: 'postgres://unused' }, ECPDS_SECRET_KEY: 'a2V5', ...vars }) as never;

  it.each([
    [undefined, '/ecpds'],
    ['', null],
    ['/', null],
    ['  /', null],
    ['/dds', '/dds'],
    ['/dds/api/', '/dds/api'],
  ])('reads %j as %j on Node and Workers alike', (value, expected) => {
    const env = value === undefined ? {} : { ECPDS_BASE_PATH: value };
    expect(parseConfig(env).basePath).toBe(expected);
    expect(workerConfig(workerEnv(env)).ECPDS_BASE_PATH).toBe(expected);
  });

  it.each(['ecpds', '/ec pds', '/a//b', '/x?y'])('refuses %j by name', (value) => {
    expect(() => parseConfig({ ECPDS_BASE_PATH: value })).toThrow(
      `ECPDS_BASE_PATH must be a path such as /ecpds, got '${value}'`,
    );
  });
});

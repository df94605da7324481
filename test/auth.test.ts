import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authenticate,
  CLIENT_RECORD_TTL_MS,
  createCredentialCache,
  parseBasicAuthorization,
} from '../core/api-clients/auth.ts';
import * as apiClients from '../core/api-clients/clients.ts';
import type { ApiClient, CredentialCache } from '../core/api-clients/ports.ts';
import { hashPassword, isSlowHash } from '../core/common/crypto.ts';
import type { Ports } from '../core/ports.ts';
import { createHarness, type Harness } from './support/harness.ts';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

describe('parseBasicAuthorization', () => {
  it.each([
    ['a plain header', `Basic ${b64('alice:s3cret')}`, { username: 'alice', secret: 's3cret' }],
    ['the scheme in any case', `bAsIc ${b64('alice:s3cret')}`, { username: 'alice', secret: 's3cret' }],
    ['several spaces and trailing blanks', `Basic   ${b64('alice:s3cret')}  `, { username: 'alice', secret: 's3cret' }],
    [
      'a secret with colons (split at the first)',
      `Basic ${b64('alice:a:b::c')}`,
      { username: 'alice', secret: 'a:b::c' },
    ],
    ['an empty secret', `Basic ${b64('alice:')}`, { username: 'alice', secret: '' }],
    ['UTF-8 text', `Basic ${b64('zoë:pässword')}`, { username: 'zoë', secret: 'pässword' }],
  ])('reads %s', (_, header, expected) => {
    expect(parseBasicAuthorization(header)).toEqual(expected);
  });

  it.each([
    ['no header', undefined],
    ['null', null],
    ['an empty header', ''],
    ['another scheme', `Bearer ${b64('alice:s3cret')}`],
    ['the scheme alone', 'Basic'],
    ['no space after the scheme', `Basic${b64('alice:s3cret')}`],
    ['two tokens', `Basic ${b64('alice:s3cret')} extra`],
    ['missing padding', 'Basic YWxpY2U6eA'],
    ['base64url letters', `Basic ${b64('alice:??>>').replace(/\+/g, '-').replace(/\//g, '_')}`],
    ['characters outside base64', 'Basic YWxp!2U6eA=='],
    ['padding inside the token', 'Basic YQ==YWxpY2U6'],
    ['no colon', `Basic ${b64('alice')}`],
    ['an empty username', `Basic ${b64(':s3cret')}`],
    ['bytes that are not UTF-8', `Basic ${Buffer.from([0x61, 0x3a, 0xff, 0xfe]).toString('base64')}`],
  ])('refuses %s', (_, header) => {
    expect(parseBasicAuthorization(header)).toBeNull();
  });
});

describe('createCredentialCache', () => {
  it('remembers a key for five minutes', () => {
    const cache = createCredentialCache(new Uint8Array(32));
    expect(cache.has('k', 1_000)).toBe(false);
    cache.add('k', 1_000);
    expect(cache.has('k', 1_000)).toBe(true);
    expect(cache.has('k', 1_000 + 5 * 60_000 - 1)).toBe(true);
    expect(cache.has('k', 1_000 + 5 * 60_000)).toBe(false);
    expect(cache.has('k', 1_000)).toBe(false); // the expired entry is gone
  });

  it("keeps a client record for CLIENT_RECORD_TTL_MS by the caller's clock, also from time 0", () => {
    const cache = createCredentialCache(new Uint8Array(32));
    const client = { username: 'a' } as ApiClient;
    cache.rememberClient(client, 0);
    expect(cache.client('a', CLIENT_RECORD_TTL_MS - 1)).toBe(client);
    expect(cache.client('a', CLIENT_RECORD_TTL_MS)).toBeNull();
    cache.rememberClient(client, 5_000);
    cache.forgetClient('a');
    expect(cache.client('a', 5_000)).toBeNull();
  });

  it('says a last-used time is worth writing at most once a minute per client', () => {
    const cache = createCredentialCache(new Uint8Array(32));
    expect(cache.shouldTouch('a', 0)).toBe(true);
    expect(cache.shouldTouch('a', 59_999)).toBe(false);
    expect(cache.shouldTouch('b', 59_999)).toBe(true);
    expect(cache.shouldTouch('a', 60_000)).toBe(true);
  });
});

/** The real cache, counting: a `has` miss on a slow hash is exactly one scrypt run. */
function countingCache(inner: CredentialCache) {
  const counts = { hits: 0, misses: 0, adds: 0 };
  const cache: CredentialCache = {
    hashKey: inner.hashKey,
    shouldTouch: (u, now) => inner.shouldTouch(u, now),
    client: (u, now) => inner.client(u, now),
    rememberClient: (c, now) => inner.rememberClient(c, now),
    forgetClient: (u) => inner.forgetClient(u),
    has(key, now) {
      const hit = inner.has(key, now);
      counts[hit ? 'hits' : 'misses']++;
      return hit;
    },
    add(key, now) {
      counts.adds++;
      inner.add(key, now);
    },
  };
  return { cache, counts };
}

describe('authenticate and the scrypt verification cache', () => {
  let h: Harness;
  let ports: Ports;
  let counts: { hits: number; misses: number; adds: number };
  // Moved forward to step past the client-record lifetime, as time passing would.
  let skew = 0;
  const as = (username: string, secret: string, service: string | null = 'incomingUserList') =>
    authenticate(ports, { username, secret }, service);

  beforeAll(async () => {
    h = await createHarness();
    const counting = countingCache(createCredentialCache(new Uint8Array(32).fill(7)));
    ports = { ...h.ports, credentialCache: counting.cache, clock: () => new Date(Date.now() + skew) };
    counts = counting.counts;
    await apiClients.provisionFromProperties(ports, '[API]\nprops=Pass-word-1:incoming.*\n');
  });
  afterAll(() => h.close());

  it('verifies a properties password once; the next call does not run scrypt', async () => {
    expect(await as('props', 'Pass-word-1')).toEqual({ username: 'props', showSensitiveInfo: false });
    expect(counts).toEqual({ hits: 0, misses: 1, adds: 1 });
    expect(await as('props', 'Pass-word-1')).toEqual({ username: 'props', showSensitiveInfo: false });
    expect(counts).toEqual({ hits: 1, misses: 1, adds: 1 });
  });

  it('never remembers a wrong password', async () => {
    await expect(as('props', 'Pass-word-2')).rejects.toMatchObject({
      kind: 'unauthorized',
      message: 'User not authorized',
    });
    await expect(as('props', 'Pass-word-2')).rejects.toMatchObject({ kind: 'unauthorized' });
    expect(counts).toEqual({ hits: 1, misses: 3, adds: 1 });
  });

  it('checks the permission even on a cache hit', async () => {
    await expect(as('props', 'Pass-word-1', 'webUserList')).rejects.toMatchObject({ kind: 'unauthorized' });
    expect(counts.hits).toBe(2);
    expect(counts.adds).toBe(1);
  });

  it('a change of secret drops the cached verification', async () => {
    // Changed behind this process's back (as the CLI would), seen once the record is stale.
    await h.ports.repos.clients.update('props', {
      secretHash: await hashPassword(h.ports.hashing, 'New-pass-3'),
      updatedAt: new Date(),
    });
    skew += CLIENT_RECORD_TTL_MS;
    const before = { ...counts };
    await expect(as('props', 'Pass-word-1')).rejects.toMatchObject({ kind: 'unauthorized' });
    expect(counts).toEqual({ ...before, misses: before.misses + 1 });
    await as('props', 'New-pass-3');
    await as('props', 'New-pass-3');
    expect(counts).toEqual({ hits: before.hits + 1, misses: before.misses + 2, adds: before.adds + 1 });

    // A reset to a generated secret: the old password is refused, the new secret accepted.
    const { secret } = await apiClients.resetSecret(ports, 'test', 'props');
    await expect(as('props', 'New-pass-3')).rejects.toMatchObject({ kind: 'unauthorized' });
    expect((await as('props', secret)).username).toBe('props');
  });

  it('generated secrets (sha256) do not use the cache', async () => {
    const { secret } = await apiClients.create(ports, 'test', { username: 'gen', permissions: ['.*'], origin: 'cli' });
    const before = { ...counts };
    expect(await as('gen', secret)).toEqual({ username: 'gen', showSensitiveInfo: true });
    await expect(as('gen', `${secret}x`)).rejects.toMatchObject({ kind: 'unauthorized' });
    expect(counts).toEqual(before);
  });

  it('an unknown username gets the same answer', async () => {
    await expect(as('nobody', 'Pass-word-1')).rejects.toMatchObject({
      kind: 'unauthorized',
      message: 'User not authorized',
    });
  });
});

describe('parseProperties', () => {
  it('reads the [API] section only; the password ends at the first colon', () => {
    const text = [
      '# comment',
      '; another',
      'top=level:.*',
      '[API]',
      'alice=pw1:incoming.*',
      '  bob = pw2:(?:a|b):c  ',
      '[ Other ]',
      'carol=pw3:.*',
      '[ API ]',
      'dave=p=w:x',
      '',
    ].join('\r\n');
    expect(apiClients.parseProperties(text)).toEqual([
      { line: 5, username: 'alice', password: 'pw1', permission: 'incoming.*' },
      { line: 6, username: 'bob', password: ' pw2', permission: '(?:a|b):c' },
      { line: 10, username: 'dave', password: 'p=w', permission: 'x' },
    ]);
  });

  it('reports malformed lines by number', () => {
    const reason = 'expected <username>=<password>:<service-regex>';
    expect(apiClients.parseProperties('[API]\nno-equals\n=pw:.*\nname=no-colon\nok=pw:.*')).toEqual([
      { line: 2, reason },
      { line: 3, reason },
      { line: 4, reason },
      { line: 5, username: 'ok', password: 'pw', permission: '.*' },
    ]);
  });
});

describe('provisionFromProperties', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it('creates absent clients with an scrypt hash, skips bad entries, never overwrites', async () => {
    const existing = await apiClients.create(h.ports, 'test', {
      username: 'taken',
      permissions: ['webUserList'],
      origin: 'cli',
    });
    const takenBefore = await h.ports.repos.clients.find('taken');
    const outcomes = await apiClients.provisionFromProperties(
      h.ports,
      [
        '[API]',
        'fresh=Fresh-pass-1:incoming.*',
        'taken=Other-pass-1:.*',
        'badregex=Pass-1:incoming(',
        'bad name=Pass-1:.*',
        'nopass=:.*',
        'garbage',
        'fresh=Second-pass:.*',
      ].join('\n'),
    );
    expect(outcomes).toEqual([
      { line: 2, username: 'fresh', result: 'created' },
      { line: 3, username: 'taken', result: 'kept' },
      { line: 4, result: 'skipped', reason: 'Invalid permission expression: incoming(' },
      { line: 5, result: 'skipped', reason: expect.stringMatching(/^Invalid client username: bad name/) },
      { line: 6, result: 'skipped', reason: 'empty password' },
      { line: 7, result: 'skipped', reason: 'expected <username>=<password>:<service-regex>' },
      { line: 8, username: 'fresh', result: 'kept' },
    ]);

    const fresh = (await h.ports.repos.clients.find('fresh'))!;
    expect(fresh).toMatchObject({ origin: 'properties', permissions: ['incoming.*'] });
    expect(isSlowHash(fresh.secretHash)).toBe(true);
    expect(fresh.secretHash).not.toContain('Fresh-pass-1');
    expect(await h.ports.repos.clients.find('taken')).toEqual(takenBefore);
    expect(await h.ports.repos.clients.find('badregex')).toBeNull();
    expect((await h.ports.repos.clients.list()).map((c) => c.username).sort()).toEqual(['fresh', 'taken']);

    const auth = (username: string, secret: string) => authenticate(h.ports, { username, secret }, null);
    expect((await auth('fresh', 'Fresh-pass-1')).username).toBe('fresh');
    await expect(auth('fresh', 'Second-pass')).rejects.toMatchObject({ kind: 'unauthorized' });
    expect((await auth('taken', existing.secret)).username).toBe('taken');
    await expect(auth('taken', 'Other-pass-1')).rejects.toMatchObject({ kind: 'unauthorized' });

    // A second run (the next start) keeps everything as it is.
    const again = await apiClients.provisionFromProperties(h.ports, '[API]\nfresh=Changed-1:.*\n');
    expect(again).toEqual([{ line: 2, username: 'fresh', result: 'kept' }]);
    expect(await h.ports.repos.clients.find('fresh')).toMatchObject({
      secretHash: fresh.secretHash,
      permissions: ['incoming.*'],
      updatedAt: fresh.updatedAt,
    });
  });
});

describe('the client record cache', () => {
  let h: Harness;
  let ports: Ports;
  let finds = 0;
  let skew = 0;
  const as = (username: string, secret: string, service = 'destinationList') =>
    authenticate(ports, { username, secret }, service);

  beforeAll(async () => {
    h = await createHarness();
    const clients = { ...h.ports.repos.clients, find: (u: string) => (finds++, h.ports.repos.clients.find(u)) };
    ports = { ...h.ports, repos: { ...h.ports.repos, clients }, clock: () => new Date(Date.now() + skew) };
  });
  afterAll(() => h.close());

  it('serves repeated requests of one client from one query', async () => {
    const { secret } = await apiClients.create(ports, 'test', {
      username: 'busy',
      permissions: ['destinationList'],
      origin: 'cli',
    });
    finds = 0;
    for (let i = 0; i < 5; i++) expect((await as('busy', secret)).username).toBe('busy');
    expect(finds).toBe(1);
  });

  it('does not remember an unknown username, so a client created elsewhere works at once', async () => {
    finds = 0;
    await expect(as('later', 'x')).rejects.toMatchObject({ kind: 'unauthorized' });
    await expect(as('later', 'x')).rejects.toMatchObject({ kind: 'unauthorized' });
    expect(finds).toBe(2);
  });

  it('sees changes made through this process at once', async () => {
    const { secret } = await apiClients.create(ports, 'test', {
      username: 'edited',
      permissions: ['destinationList'],
      origin: 'cli',
    });
    await as('edited', secret);
    await apiClients.setPermissions(ports, 'test', 'edited', ['webUserList']);
    await expect(as('edited', secret)).rejects.toMatchObject({ kind: 'unauthorized' });
    expect((await as('edited', secret, 'webUserList')).username).toBe('edited');

    const { secret: fresh } = await apiClients.resetSecret(ports, 'test', 'edited');
    await expect(as('edited', secret, 'webUserList')).rejects.toMatchObject({ kind: 'unauthorized' });
    expect((await as('edited', fresh, 'webUserList')).username).toBe('edited');

    await apiClients.remove(ports, 'test', 'edited');
    await expect(as('edited', fresh, 'webUserList')).rejects.toMatchObject({ kind: 'unauthorized' });
  });

  it('sees changes made by another process once the record is older than its lifetime', async () => {
    const { secret } = await apiClients.create(ports, 'test', {
      username: 'remote',
      permissions: ['destinationList'],
      origin: 'cli',
    });
    await as('remote', secret);
    await h.ports.repos.clients.delete('remote'); // as `ecpds-edge client delete` would, from elsewhere
    expect((await as('remote', secret)).username).toBe('remote'); // within the lifetime
    skew += CLIENT_RECORD_TTL_MS;
    await expect(as('remote', secret)).rejects.toMatchObject({ kind: 'unauthorized' });
  });
});

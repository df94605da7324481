import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogue, type Operation } from '../core/catalogue.ts';
import { DESTINATION_KEYS, HOST_KEYS } from '../core/destinations/model.ts';
import { loadDemoData } from '../core/system/demo.ts';
import { contractProblems } from './support/contract.ts';
import { basic, createHarness, type Harness, type Reply, readReply } from './support/harness.ts';

/**
 * Property-based bad input for every operation of the catalogue: whatever arrives, the answer
 * stays inside the contract of wire-decisions §1 and never shows a stack trace or SQL.
 * ECPDS_FUZZ_RUNS raises the runs per operation; ECPDS_FUZZ_SEED replays a failure.
 */
const RUNS = Number(process.env.ECPDS_FUZZ_RUNS ?? 30);
const SEED = process.env.ECPDS_FUZZ_SEED ? Number(process.env.ECPDS_FUZZ_SEED) : undefined;
const MAX_BODY = 64 * 1024;

const SOURCES = mkdtempSync(path.join(tmpdir(), 'ecpds-fuzz-'));
const SOURCE_FILE = path.join(SOURCES, 'data.grib');
writeFileSync(SOURCE_FILE, 'GRIB');

let h: Harness;
let admin: string;
beforeAll(async () => {
  h = await createHarness({ maxBodyBytes: MAX_BODY, sourceRoots: [SOURCES] });
  admin = await h.client('fuzzer', ['.*']);
  // Real destinations, hosts and fields, so that some inputs get past the lookups.
  await loadDemoData(h.ports);
  const fixtures = [
    ['POST', '/v1/incoming/user/add?id=fuzz_user&pass=Fuzz-pass-1&email=fuzz@example.org&iso=gb&active=true'],
    ['POST', '/v1/incoming/association/add?id=fuzz_user&destination=MO_EXETER'],
    ['POST', '/v1/web/user/add?id=fuzz.web&pass=Fuzz-pass-1&active=true'],
    ['GET', `/v1/datafile/put?destination=MO_EXETER&source=${encodeURIComponent(SOURCE_FILE)}`],
  ];
  for (const [method, path] of fixtures) expect((await h.call(method!, path!, { auth: admin })).status).toBe(200);
});
afterAll(async () => {
  await h.close();
  rmSync(SOURCES, { recursive: true, force: true });
});

// ---- values -------------------------------------------------------------------------------

const NASTY = [
  '',
  ' ',
  '\t',
  '0',
  '-0',
  '+1',
  '1.5',
  '1e309',
  'NaN',
  'Infinity',
  '9'.repeat(400),
  '-9007199254740993',
  '2147483648',
  '-2147483649',
  '0x1f',
  'true',
  'FALSE',
  'yes',
  'null',
  'undefined',
  '[]',
  '{}',
  '%',
  '%00',
  '%E0%A4%A',
  '\u0000',
  'a\u0000b',
  '\r\n',
  '\u202e',
  '\ud800',
  '\uffff',
  '𝕏',
  '👩‍👩‍👧',
  'e\u0301',
  "' OR '1'='1",
  '"; drop table api_clients; --',
  '../../../etc/passwd',
  '/etc/passwd',
  'file:///etc/passwd',
  'http://127.0.0.1:1/x',
  '<script>alert(1)</script>',
  '\\',
  '$',
  '.*',
  '(',
  '+1h',
  '-1d',
  'P1D',
  '20250101000000',
  'MO_EXETER',
  'mo_exeter',
  'gb',
  'GB',
  'zz',
  'open-access',
  'a@b',
  'x@y.z',
  'Smoke',
  '00',
  'fc',
];
const nasty = fc.constantFrom(...NASTY);
const value: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: nasty },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
  { weight: 1, arbitrary: fc.integer().map(String) },
  { weight: 1, arbitrary: fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String) },
  { weight: 1, arbitrary: fc.double().map(String) },
  { weight: 1, arbitrary: fc.nat({ max: 20_000 }).map((n) => 'x'.repeat(n)) },
);
const anyJson = fc.jsonValue({ maxDepth: 3 });
const hugeInt = fc.oneof(
  fc.integer(),
  fc.maxSafeInteger(),
  fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 2 ** 53, 1e300, -0, 0.5),
);
const looseScalar = fc.oneof(value, hugeInt, fc.boolean(), fc.constant(null));
const looseRecord = (keys: Record<string, unknown>) =>
  fc.dictionary(
    fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...Object.keys(keys)) }, { weight: 1, arbitrary: fc.string() }),
    looseScalar,
    { maxKeys: 12 },
  );

// ---- requests -----------------------------------------------------------------------------

interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** Every value sent, which a 400 may quote back. */
  echoed: string[];
  /** What the statistics file it under. */
  label: string;
}

async function send(req: Sent): Promise<Reply> {
  return readReply(
    await h.app.request(`https://localhost${req.path}`, { method: req.method, headers: req.headers, body: req.body }),
  );
}

// Lone surrogates cannot be percent-encoded; what a client library would send is U+FFFD.
const encodeComponent = (s: string) =>
  encodeURIComponent(s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'));

// A plausible value per parameter name, so that many requests get past the first check.
const GOOD: Record<string, string[]> = {
  id: ['fuzz_user', 'fuzz.web', '1'],
  name: ['MO_EXETER', 'DWD_OFFENBACH', 'sftp.port'],
  destination: ['MO_EXETER', 'JMA_TOKYO'],
  email: ['fuzz@example.org'],
  iso: ['gb', 'FR'],
  pass: ['Fuzz-pass-1'],
  active: ['true', 'false'],
  portalService: ['open-access'],
  category: ['administrator'],
  type: ['1', 'fc'],
  copySharedHost: ['true', 'false'],
  hostid: ['1', '2'],
  value: ['2222', ''],
  product: ['Smoke'],
  time: ['00'],
  step: ['1'],
  status: ['done', 'INIT'],
  source: [SOURCE_FILE, 'https://data.example.org/x'],
  uniquename: ['u1'],
  target: ['t.grib'],
  metadata: ['k=v'],
  priority: ['0', '99'],
  lifetime: ['2d', 'PT1H'],
  at: ['+1h', '20300101000000'],
  standby: ['true'],
  force: ['true', 'false'],
};
// Where an operation reads a name differently (an integer id, a numeric type).
const GOOD_IN: Record<string, Record<string, string[]>> = {
  datafileSize: { id: ['1', '2'] },
  datafileDel: { id: ['1', '2'] },
  destinationList: { type: ['1', '2'] },
  backupList: { type: ['1', '2'] },
};
const good = (name: string, op = '') => fc.constantFrom(...(GOOD_IN[op]?.[name] ?? GOOD[name] ?? ['x']));

const segment = (name: string) =>
  fc.oneof(
    { weight: 3, arbitrary: good(name) },
    { weight: 4, arbitrary: value.filter((v) => v !== '').map(encodeComponent) },
    {
      weight: 1,
      arbitrary: fc.constantFrom('%', '%zz', '..', '.', '%2F', '%252F', '%2e%2e', '%00', '%C0%AF', ';x', 'a%20b'),
    },
  );

/** Absent, a plausible value, a bad one, or twice (a duplicated parameter). */
const occurrences = (name: string, op = '') =>
  fc.oneof(
    { weight: 1, arbitrary: fc.constant([] as string[]) },
    { weight: 4, arbitrary: good(name, op).map((v) => [v]) },
    { weight: 3, arbitrary: value.map((v) => [v]) },
    { weight: 1, arbitrary: fc.tuple(fc.oneof(good(name, op), value), fc.oneof(good(name, op), value)) },
  );

/**
 * The query parameters of an operation: each plausible (or absent), then up to three of them
 * spoiled (missing, a bad value, duplicated), so that a few faults meet otherwise good input.
 */
const queryParams = (names: string[], op: string): fc.Arbitrary<string[][]> =>
  names.length === 0
    ? fc.constant([])
    : fc
        .tuple(
          fc.tuple(
            ...names.map((n) =>
              fc.oneof(
                { weight: 1, arbitrary: fc.constant([] as string[]) },
                { weight: 4, arbitrary: good(n, op).map((v) => [v]) },
              ),
            ),
          ),
          fc.array(
            fc.nat().chain((i) => occurrences(names[i % names.length]!, op).map((o) => [i, o] as const)),
            { maxLength: 3 },
          ),
        )
        .map(([base, spoils]) => {
          const out = base.map((v) => [...v]);
          for (const [i, o] of spoils) out[i % names.length] = [...o];
          return out;
        });
const extraParams = fc.array(
  fc.tuple(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('body', '__proto__', 'constructor', 'id[]')), value),
  { maxLength: 3 },
);

function queryOf(pairs: Array<[string, string]>, raw: boolean): string {
  if (pairs.length === 0) return '';
  // Raw: the values as they come, so malformed %-escapes and stray characters reach the parser.
  const encode = raw ? (s: string) => s.replace(/[#&]/g, encodeURIComponent) : encodeComponent;
  return `?${pairs.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&')}`;
}

const pathParams = (op: Operation) => [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);

const CONTENT_TYPES = [
  undefined,
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  '',
  'application/xml',
];

const FIELD_NAMES = [
  'summary',
  'notes',
  'website',
  'service_level',
  'policy',
  'primary_contact',
  'ops_mail',
  'switchboard',
  'escalation_email',
  'duty_phone',
  'portal_token',
];
const fieldValue = fc.oneof(
  { weight: 3, arbitrary: value },
  { weight: 1, arbitrary: looseScalar },
  { weight: 1, arbitrary: fc.array(fc.oneof(value, looseScalar), { maxLength: 4 }) },
  { weight: 2, arbitrary: looseRecord({ name: 1, email: 1, phone: 1, fax: 1 }) },
  { weight: 1, arbitrary: anyJson },
);
const metadataBody = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      metadata: fc.dictionary(
        fc.constantFrom('General', 'Contacts', 'Access', 'Other', ''),
        fc.dictionary(
          fc.oneof({ weight: 9, arbitrary: fc.constantFrom(...FIELD_NAMES) }, { weight: 1, arbitrary: fc.string() }),
          fieldValue,
          { maxKeys: 6 },
        ),
        { maxKeys: 3 },
      ),
      includeInNotes: fc.option(fc.oneof(anyJson, fc.constant({ General: { summary: true } })), { nil: undefined }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ metadata: anyJson, includeInNotes: anyJson }, { requiredKeys: [] }) },
);

/** A valid backup entry with a few of its keys replaced by anything. */
const backupEntry = fc
  .record({
    name: fc.oneof(fc.constantFrom('MO_EXETER', 'FUZZ_NEW'), fc.string({ minLength: 1, maxLength: 40 })),
    destination: fc
      .tuple(looseRecord(DESTINATION_KEYS), fc.nat({ max: 2 }))
      .map(([d, n]) => Object.fromEntries(Object.entries(d).slice(0, n))),
    host: fc
      .tuple(looseRecord(HOST_KEYS), fc.nat({ max: 2 }))
      .map(([d, n]) => Object.fromEntries(Object.entries(d).slice(0, n))),
    priority: fc.oneof(fc.constant(0), hugeInt),
    hosts: fc.nat({ max: 2 }),
  })
  .map(({ name, destination, host, priority, hosts }) => ({
    destination: { name, countryIso: 'gb', type: 1, ecuserName: 'ecpds', ...destination },
    associations: Array.from({ length: hosts }, (_, i) => ({
      priority,
      host: {
        nickname: `${name}-${i}`,
        host: 'h.example.org',
        transferMethodName: 'sftp',
        ecuserName: 'ecpds',
        passwd: 'p',
        ...host,
      },
    })),
  }));
const backupBody = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .record(
        {
          destinations: fc.array(backupEntry, { maxLength: 2 }),
          aliases: fc.array(
            fc.record({
              aliasFrom: fc.constantFrom('MO_EXETER', 'FUZZ_NEW'),
              aliasTo: fc.oneof(fc.constant('JMA_TOKYO'), fc.string({ minLength: 1 })),
            }),
            { maxLength: 1 },
          ),
          methods: fc.array(
            fc.record({
              name: fc.oneof(fc.constant('sftp'), fc.string({ minLength: 1 })),
              ectransModuleName: fc.constant('sftp'),
              ectransModule: fc.option(
                fc.record({ name: fc.constantFrom('sftp', 'new-module'), classe: fc.option(value, { nil: null }) }),
                { nil: null },
              ),
            }),
            { maxLength: 1 },
          ),
          ecusers: fc.array(
            fc.record({
              name: fc.oneof(fc.constant('ecpds'), fc.string({ minLength: 1 })),
              uid: fc.option(hugeInt, { nil: null }),
              dir: fc.option(value, { nil: null }),
            }),
            { maxLength: 1 },
          ),
        },
        { requiredKeys: ['destinations'] },
      )
      .map((backup) => ({ backup })),
  },
  { weight: 1, arbitrary: fc.record({ backup: anyJson, status: anyJson, extra: anyJson }, { requiredKeys: [] }) },
);

const structured: Record<string, fc.Arbitrary<unknown>> = {
  metadataPut: metadataBody,
  backupPut: backupBody,
  incomingCategoryAdd: fc.array(fc.oneof(value, anyJson), { maxLength: 5 }),
};

/** A JSON body: arbitrary JSON, something close to what the operation wants, broken or hostile text. */
const jsonBody = (id: string): fc.Arbitrary<string | Uint8Array | undefined> =>
  fc.oneof(
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 3, arbitrary: anyJson.map((v) => JSON.stringify(v)) },
    { weight: 6, arbitrary: (structured[id] ?? anyJson).map((v) => JSON.stringify(v)) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 60 }) },
    {
      weight: 1,
      arbitrary: fc.tuple(anyJson, fc.nat()).map(([v, n]) => {
        const t = JSON.stringify(v) ?? '';
        return t.slice(0, n % (t.length + 1));
      }),
    },
    { weight: 1, arbitrary: fc.integer({ min: 10, max: 20_000 }).map((n) => '['.repeat(n) + ']'.repeat(n)) },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 10, max: 5_000 }).map((n) => '{"metadata":'.repeat(n) + '{}' + '}'.repeat(n)),
    },
    {
      weight: 1,
      arbitrary: fc
        .uint8Array({ minLength: 1, maxLength: 40 })
        .map((b) => Uint8Array.from([0x5b, 0x22, 0xff, 0xfe, ...b, 0x22, 0x5d])),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '{"a":1}{"b":2}',
        '\ufeff{}',
        '{"__proto__":{"x":1}}',
        '[1,]',
        'null',
        '"string"',
        '1e999',
        '{"backup":null}',
      ),
    },
  );

const formBody = fc.oneof(
  fc
    .tuple(fc.tuple(occurrences('hostid'), occurrences('name'), occurrences('value')), extraParams)
    .map(([[hostid, name, v], extra]) =>
      new URLSearchParams([
        ...hostid.map((x) => ['hostid', x] as [string, string]),
        ...name.map((x) => ['name', x] as [string, string]),
        ...v.map((x) => ['value', x] as [string, string]),
        ...extra,
      ]).toString(),
    ),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.constant(undefined),
);

function requestFor(id: string, op: Operation): fc.Arbitrary<Sent> {
  const names = Object.keys(op.input.shape).filter((n) => n !== 'body');
  const inPath = new Set(pathParams(op));
  const inQuery = names.filter((n) => !inPath.has(n));
  const body: fc.Arbitrary<string | Uint8Array | undefined> =
    op.body === 'json'
      ? jsonBody(id)
      : op.body === 'form'
        ? formBody
        : op.method === 'GET'
          ? fc.constant(undefined)
          : fc.option(value, { nil: undefined });
  return fc
    .record({
      segments: fc.tuple(...pathParams(op).map(segment)),
      params: queryParams(inQuery, id),
      extra: extraParams,
      raw: fc.boolean(),
      body,
      contentType: fc.oneof(
        { weight: 1, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
        {
          weight: 2,
          arbitrary: fc.constant(op.body === 'form' ? 'application/x-www-form-urlencoded' : 'application/json'),
        },
      ),
    })
    .map(({ segments, params, extra, raw, body, contentType }) => {
      let i = 0;
      const path = op.path.replace(/\{\w+\}/g, () => segments[i++]!);
      const pairs: Array<[string, string]> = inQuery.flatMap((name, k) =>
        params[k]!.map((v) => [name, v] as [string, string]),
      );
      pairs.push(...extra);
      const headers: Record<string, string> = { authorization: admin };
      if (contentType !== undefined && body !== undefined) headers['content-type'] = contentType;
      const echoed = [...pairs.flat(), ...segments.flatMap((s) => [s, safeDecode(s)])];
      if (typeof body === 'string') echoed.push(body, ...echoesOf(body));
      return { method: op.method, path: path + queryOf(pairs, raw), headers, body, echoed, label: id };
    });
}

/** The values inside a body that an error message may quote: JSON strings and keys, form fields. */
function echoesOf(body: string): string[] {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') out.push(v, v.trim());
    else if (typeof v === 'number') out.push(String(v));
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(k), walk(x);
  };
  try {
    walk(JSON.parse(body));
  } catch {
    // Not JSON: read it as form fields below.
  }
  for (const [k, v] of new URLSearchParams(body)) out.push(k, v, v.trim());
  return out;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

// Unhandled exceptions are inside the contract (a 500 JSON error) but are bugs all the same.
const INTERNAL = /^Internal error/;

// ECPDS_FUZZ_STATS=1 prints how often each operation answered each status: whether inputs get deep enough.
const statuses = new Map<string, Map<number, number>>();
const samples = new Map<string, string[]>();

async function check(req: Sent): Promise<Reply> {
  const r = await send(req);
  const tally = statuses.get(req.label) ?? new Map<number, number>();
  statuses.set(req.label, tally.set(r.status, (tally.get(r.status) ?? 0) + 1));
  if (r.status !== 200 && r.status !== 405)
    samples.set(req.label, [...(samples.get(req.label) ?? []), `${r.status} ${r.text.slice(0, 150)}`]);
  const problems = contractProblems(r, req.echoed, req.method);
  if (r.status === 500 && INTERNAL.test(r.json?.message ?? '')) {
    const reason = h.logLines
      .filter((l) => l.includes(r.headers.get('x-request-id') ?? '?') && l.includes('internal error'))
      .join(' ');
    problems.push(`unhandled exception: ${reason}`);
  }
  if (problems.length) throw new Error(`${req.method} ${req.path.slice(0, 300)} → ${r.status}\n${problems.join('\n')}`);
  return r;
}

afterAll(() => {
  if (process.env.ECPDS_FUZZ_STATS)
    for (const [label, t] of statuses) console.log(label, JSON.stringify(Object.fromEntries(t)));
  if (process.env.ECPDS_FUZZ_STATS) for (const [label, t] of samples) console.log(label, t.slice(0, 6).join('\n  '));
});

const assertProperty = (arb: fc.Arbitrary<Sent>, runs = RUNS) =>
  fc.assert(
    fc.asyncProperty(arb, async (req) => void (await check(req))),
    { numRuns: runs, seed: SEED, endOnFailure: true },
  );

// ---- properties ---------------------------------------------------------------------------

describe('fuzzing every operation with bad input', () => {
  for (const [id, op] of Object.entries(catalogue) as Array<[string, Operation]>) {
    it(`${op.method} ${op.path} (${id})`, async () => {
      await assertProperty(requestFor(id, op));
    });
  }
});

describe('fuzzing around the operations', () => {
  it('a body over the limit is 413 on every operation that reads one', async () => {
    const readers = (Object.values(catalogue) as Operation[]).filter((op) => op.body);
    await assertProperty(
      fc.tuple(fc.constantFrom(...readers), fc.integer({ min: MAX_BODY + 1, max: MAX_BODY * 3 })).map(([op, size]) => ({
        method: op.method,
        path: op.path.replace(/\{\w+\}/g, 'MO_EXETER') + '?id=x&hostid=1&name=a.b&value=v',
        headers: {
          authorization: admin,
          'content-type': op.body === 'form' ? 'application/x-www-form-urlencoded' : 'application/json',
        },
        body: `["${'x'.repeat(size)}"]`,
        echoed: [],
        label: 'oversized',
      })),
      10,
    );
    const r = await send({
      method: 'PUT',
      path: '/v1/destination/backup',
      headers: { authorization: admin },
      body: 'x'.repeat(MAX_BODY + 1),
      echoed: [],
      label: 'oversized',
    });
    expect(r.status).toBe(413);
  });

  it('wrong methods and unknown paths', async () => {
    const ops = Object.values(catalogue) as Operation[];
    await assertProperty(
      fc
        .record({
          op: fc.constantFrom(...ops),
          method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
          suffix: fc.oneof(
            fc.constant(''),
            segment('name').map((s) => `/${s}`),
            fc.constantFrom('/', '//', '/../..', '/%2e%2e/x'),
          ),
        })
        .map(({ op, method, suffix }) => ({
          method,
          path: op.path.replace(/\{\w+\}/g, 'MO_EXETER') + suffix,
          headers: { authorization: admin },
          echoed: [suffix],
          label: 'methods and paths',
        })),
      RUNS * 2,
    );
  });

  it('hostile Authorization headers and client addresses', async () => {
    const ops = (Object.values(catalogue) as Operation[]).filter((op) => !op.body);
    const header = fc.oneof(
      value,
      fc.tuple(value, value).map(([u, s]) => basic(u, s)),
      fc.tuple(fc.constantFrom('fuzzer', 'admin', 'FUZZER'), value).map(([u, s]) => basic(u, s)),
      fc.string({ unit: 'binary', maxLength: 40 }).map((s) => `Basic ${Buffer.from(s).toString('base64')}`),
      fc.constantFrom(
        'Basic',
        'Basic ',
        'basic =',
        'Basic ====',
        `Basic ${'A'.repeat(8000)}`,
        'Bearer x',
        'Basic Og==',
      ),
    );
    await assertProperty(
      fc
        .record({ op: fc.constantFrom(...ops), auth: header, address: fc.oneof(value, fc.ipV4(), fc.ipV6()) })
        .map(({ op, auth, address }) => ({
          method: op.method,
          path: op.path.replace(/\{\w+\}/g, 'MO_EXETER') + '?id=1&destination=MO_EXETER&source=x',
          // Header values cannot hold line breaks or non-Latin-1 characters: such a request cannot even be sent.
          headers: { authorization: latin1(auth), 'x-test-address': latin1(address) },
          echoed: [],
          label: 'authorization',
        })),
      RUNS * 2,
    );
  });
});

const latin1 = (s: string) => s.replace(/[^\u0020-\u007e\u00a0-\u00ff]/g, '?');

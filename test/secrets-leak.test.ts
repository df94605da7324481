import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogue, type OperationId, SERVICE_NAMES, SHOW_SENSITIVE_INFO } from '../core/catalogue.ts';
import { hashPassword } from '../core/common/crypto.ts';
import { readOptions } from '../core/hosts/options.ts';
import { importFields } from '../core/metadata/fields.ts';
import { rowsOf } from '../db/client.ts';
import { basic, type CallOptions, createHarness, type Harness, type Reply } from './support/harness.ts';

/**
 * A pass over every endpoint with known secrets in play. No log line and no event entry may
 * hold one; no answer to a client without showSensitiveInfo may hold one; an answer to a
 * client with it may hold them only where wire-decisions §4, §6 and §7 say.
 */
const mark = (what: string) => `${what}-${Math.random().toString(36).slice(2, 10)}-Zq9`;
const SECRET = {
  incomingByAdmin: mark('in-admin'),
  incomingByPlain: mark('in-plain'),
  webByAdmin: mark('web-admin'),
  webByPlain: mark('web-plain'),
  hostByAdmin: mark('host-admin'),
  hostByPlain: mark('host-plain'),
  metaByAdmin: mark('meta-admin'),
  metaByPlain: mark('meta-plain'),
  fieldDefault: mark('field-default'),
  lockedDefault: mark('locked-default'),
  propertiesClient: mark('props-client'),
  wrongGuess: mark('wrong-guess'),
  metaRejected: mark('meta-rejected'),
  // Host options: a private key's body and an S3 secret restored by admin, a pass phrase set by plain.
  keyBody: mark('key-body'),
  s3Secret: mark('s3-secret'),
  passPhraseByPlain: mark('pass-phrase'),
};
const PRIVATE_KEY = `-----BEGIN OPENSSH PRIVATE KEY-----\n${SECRET.keyBody}\n-----END OPENSSH PRIVATE KEY-----`;
// Filled in as they appear: generated client secrets and generated web user passwords.
const generated: string[] = [];
const allSecrets = () => [...Object.values(SECRET), ...generated];

/** Where a client with showSensitiveInfo may see a stored secret (by operation). */
const SENSITIVE_PATHS: Partial<Record<OperationId, RegExp>> = {
  incomingUserList: /^userList\.\d+\.password$/,
  webUserList: /^userList\.\d+\.password$/,
  backupList: /^backup\.destinations\.\d+\.associations\.\d+\.host\.(?:passwd|data)$/,
  backupGet: /^backup\.destinations\.\d+\.associations\.\d+\.host\.(?:passwd|data)$/,
  metadataGet: /^metadata\.Access\.(?:vault_key|locked_key)$/,
  metadataFields: /^fields\.\d+\.defaultValue$/,
};

const SOURCES = mkdtempSync(path.join(tmpdir(), 'ecpds-leak-'));
writeFileSync(path.join(SOURCES, 'fc.grib'), 'GRIB');

interface Seen {
  op: OperationId | 'failure';
  who: 'admin' | 'plain' | 'other';
  reply: Reply;
}

let h: Harness;
let admin: string;
let plain: string;
const seen: Seen[] = [];
const called = new Set<OperationId>();

async function call(op: OperationId, who: 'admin' | 'plain', url: string, opts: CallOptions = {}) {
  const { method } = catalogue[op];
  const reply = await h.call(method, url, { auth: who === 'admin' ? admin : plain, ...opts });
  seen.push({ op, who, reply });
  called.add(op);
  return reply;
}

const both = async (op: OperationId, url: string, opts: CallOptions = {}) => [
  await call(op, 'admin', url, opts),
  await call(op, 'plain', url, opts),
];

function backupOf(name: string, passwd: string, data = '') {
  return {
    backup: {
      destinations: [
        {
          destination: { name, countryIso: 'gb', type: 1, ecuserName: 'leak' },
          associations: [
            {
              priority: 0,
              host: {
                nickname: `${name.toLowerCase()}-h`,
                host: 'h.example.org',
                login: 'ecpds',
                passwd,
                data,
                transferMethodName: 'sftp',
                ecuserName: 'leak',
              },
            },
          ],
        },
      ],
      ecusers: [{ name: 'leak', uid: 1, gid: 1, dir: '/home/leak', shell: '/bin/sh', comment: null }],
      methods: [
        {
          name: 'sftp',
          ectransModuleName: 'sftp',
          value: null,
          restrict: false,
          resolve: true,
          comment: null,
          active: true,
          ectransModule: { name: 'sftp', classe: 'x', archive: null, active: true },
        },
      ],
      aliases: [],
    },
  };
}

const metadataOf = (vault: string) => ({ metadata: { General: { motto: 'hello' }, Access: { vault_key: vault } } });

/** Every string leaf of a JSON value with its dotted path. */
function* leaves(value: unknown, at = ''): Generator<[string, string]> {
  if (typeof value === 'string') yield [at, value];
  else if (Array.isArray(value)) for (const [i, v] of value.entries()) yield* leaves(v, at ? `${at}.${i}` : String(i));
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) yield* leaves(v, at ? `${at}.${k}` : k);
}

beforeAll(async () => {
  h = await createHarness({ sourceRoots: [SOURCES] });
  const adminClient = await import('../core/api-clients/clients.ts').then((m) =>
    m.create(h.ports, 'test', { username: 'leak-admin', permissions: ['.*'], origin: 'cli' }),
  );
  admin = basic('leak-admin', adminClient.secret);
  // Every permission by name except showSensitiveInfo (`.*` would grant it).
  const plainClient = await import('../core/api-clients/clients.ts').then((m) =>
    m.create(h.ports, 'test', {
      username: 'leak-plain',
      permissions: SERVICE_NAMES.filter((s) => s !== SHOW_SENSITIVE_INFO),
      origin: 'cli',
    }),
  );
  plain = basic('leak-plain', plainClient.secret);
  generated.push(adminClient.secret, plainClient.secret, admin.slice(6), plain.slice(6));
  // A client provisioned from a properties file: a password a person chose, stored as scrypt.
  const now = new Date();
  await h.ports.repos.clients.insert({
    username: 'leak-props',
    secretHash: await hashPassword(h.ports.hashing, SECRET.propertiesClient),
    permissions: ['destinationList'],
    origin: 'properties',
    createdAt: now,
    updatedAt: now,
    lastUsedAt: null,
  });
  generated.push(basic('leak-props', SECRET.propertiesClient).slice(6));
  await importFields(h.ports, 'test', [
    { name: 'motto', label: 'Motto', type: 'text', category: 'General', position: 1 },
    {
      name: 'vault_key',
      label: 'Vault key',
      type: 'password',
      category: 'Access',
      position: 1,
      defaultValue: SECRET.fieldDefault,
    },
    {
      name: 'locked_key',
      label: 'Locked key',
      type: 'password',
      category: 'Access',
      position: 2,
      defaultValue: SECRET.lockedDefault,
      editable: false,
    },
  ]);
});

afterAll(async () => {
  await h.close();
  rmSync(SOURCES, { recursive: true, force: true });
});

describe('a pass over every endpoint with known secrets', () => {
  it('calls every operation as a client with and one without showSensitiveInfo', async () => {
    // Writes that carry secrets, once by each client.
    expect(
      (
        await call('backupPut', 'admin', '/v1/destination/backup', {
          body: backupOf(
            'LEAK_A',
            SECRET.hostByAdmin,
            `sftp.port = "22"\nsftp.privateKey = "${PRIVATE_KEY}"\ns3.secretKey = "${SECRET.s3Secret}"\n`,
          ),
        })
      ).status,
    ).toBe(200);
    expect(
      (await call('backupPut', 'plain', '/v1/destination/backup', { body: backupOf('LEAK_B', SECRET.hostByPlain) }))
        .status,
    ).toBe(200);
    expect(
      (
        await call(
          'incomingUserAdd',
          'admin',
          `/v1/incoming/user/add?id=leak_in1&pass=${SECRET.incomingByAdmin}&email=a@example.org&iso=gb&active=true`,
        )
      ).status,
    ).toBe(200);
    expect(
      (
        await call(
          'incomingUserAdd',
          'plain',
          `/v1/incoming/user/add?id=leak_in2&pass=${SECRET.incomingByPlain}&email=b@example.org&iso=gb&active=true`,
        )
      ).status,
    ).toBe(200);
    expect(
      (await call('incomingUserAdd2', 'plain', '/v1/incoming/user/add2?id=leak_in3&email=c@example.org&iso=gb')).status,
    ).toBe(200);
    expect(
      (await call('webUserAdd', 'admin', `/v1/web/user/add?id=leak.web1&pass=${SECRET.webByAdmin}&active=true`)).status,
    ).toBe(200);
    expect(
      (await call('webUserAdd', 'plain', `/v1/web/user/add?id=leak.web2&pass=${SECRET.webByPlain}&active=true`)).status,
    ).toBe(200);
    for (const [who, id] of [
      ['admin', 'leak.gen1'],
      ['plain', 'leak.gen2'],
    ] as const) {
      const r = await call('webUserAdd2', who, `/v1/web/user/add2?id=${id}&active=true`);
      expect(r.status).toBe(200);
      generated.push(r.json.pass);
    }
    expect(
      (await call('metadataPut', 'admin', '/v1/destination/LEAK_A/metadata', { body: metadataOf(SECRET.metaByAdmin) }))
        .status,
    ).toBe(200);
    expect(
      (await call('metadataPut', 'admin', '/v1/destination/LEAK_B/metadata', { body: metadataOf(SECRET.metaByAdmin) }))
        .status,
    ).toBe(200);
    // Without showSensitiveInfo the password value is ignored and the stored one kept.
    expect(
      (await call('metadataPut', 'plain', '/v1/destination/LEAK_B/metadata', { body: metadataOf(SECRET.metaByPlain) }))
        .status,
    ).toBe(200);
    // A refused write that carries a secret: the error names the field, not the value.
    const rejected = await call('metadataPut', 'admin', '/v1/destination/LEAK_A/metadata', {
      body: { metadata: { Access: { vault_key: [SECRET.metaRejected, SECRET.metaRejected] } } },
    });
    expect(rejected.status).toBe(500);

    // Everything else, by both clients.
    await both('incomingCategoryAdd', '/v1/incoming/category/add?id=leak_in1', { body: ['ECPDS-users'] });
    await both('incomingAssociationAdd', '/v1/incoming/association/add?id=leak_in1&destination=LEAK_A');
    await both('incomingAssociationList', '/v1/incoming/association/list?id=leak_in1');
    await both('incomingUserList', '/v1/incoming/user/list');
    await both('incomingUserList', '/v1/incoming/user/list?destination=LEAK_A');
    await both('webUserList', '/v1/web/user/list');
    await both('destinationList', '/v1/destination/list');
    await both('destinationGet', '/v1/destination/LEAK_A');
    await both('destinationTypeList', '/v1/destination/type/list');
    await both('destinationCountryList', '/v1/destination/country/list');
    await both('metadataFields', '/v1/destination/metadata/fields');
    await both('metadataGet', '/v1/destination/LEAK_A/metadata');
    await both('metadataGet', '/v1/destination/LEAK_B/metadata');
    const hostid = (await call('backupGet', 'admin', '/v1/destination/backup/LEAK_B')).json.backup.destinations[0]
      .associations[0].host.hostid;
    await both('hostOption', '/v1/host/option', { form: { hostid: String(hostid), name: 'sftp.port', value: '2222' } });
    await both('destinationOption', '/v1/destination/option', {
      form: { destination: 'LEAK_B', name: 'scheduler.lifetime', value: '3d' },
    });
    const phrase = { hostid: String(hostid), name: 'sftp.passPhrase', value: SECRET.passPhraseByPlain };
    expect((await call('hostOption', 'plain', '/v1/host/option', { form: phrase })).status).toBe(200);
    await both('backupList', '/v1/destination/backup');
    await both('backupGet', '/v1/destination/backup/LEAK_A');
    await both('backupGet', '/v1/destination/backup/LEAK_B');
    await both('monitoringSummary', '/v1/monitoring/summary');
    await both('monitoringSummaryProduct', '/v1/monitoring/summary/Smoke');
    await both('monitoringSummaryCycle', '/v1/monitoring/summary/Smoke/00');
    await both('monitoringHistory', '/v1/monitoring/summary/Smoke/00/1/fc');
    const put = await call(
      'datafilePut',
      'plain',
      `/v1/datafile/put?destination=LEAK_A&source=${encodeURIComponent(path.join(SOURCES, 'fc.grib'))}`,
    );
    expect(put.status).toBe(200);
    await both('datafileSize', `/v1/datafile/size?id=${put.json.id}`);
    await call('datafileDel', 'admin', `/v1/datafile/del?id=${put.json.id}`);
    await both('incomingAssociationDel', '/v1/incoming/association/del?id=leak_in1&destination=LEAK_A');
    await call('incomingUserDel', 'plain', '/v1/incoming/user/del/leak_in2');
    await call('webUserDel', 'plain', '/v1/web/user/del/leak.web2');
    await call('version', 'plain', '/v1/version');

    // Failures that carry secrets: wrong secrets, a properties client's password, unknown names.
    const failures: Array<[string, number]> = [
      [basic('leak-admin', SECRET.wrongGuess), 500],
      [basic('nobody', SECRET.wrongGuess), 500],
      [basic('leak-props', SECRET.propertiesClient), 500],
      [basic('leak-props', `${SECRET.propertiesClient}x`), 500],
    ];
    for (const [auth, status] of failures) {
      const reply = await h.call('GET', '/v1/incoming/user/list', { auth });
      expect(reply.status).toBe(status);
      seen.push({ op: 'failure', who: 'other', reply });
    }
    const ok = await h.call('GET', '/v1/destination/list', { auth: basic('leak-props', SECRET.propertiesClient) });
    expect(ok.status).toBe(200);
    seen.push({ op: 'destinationList', who: 'other', reply: ok });
    await h.settle();

    expect([...called].sort()).toEqual(Object.keys(catalogue).sort());
  });

  it('logs and event entries hold none of the secrets', () => {
    const lines = [...h.logLines, ...h.events];
    expect(lines.length).toBeGreaterThan(50);
    for (const secret of allSecrets()) {
      const hits = lines.filter((l) => l.includes(secret));
      expect(hits, `log lines holding ${secret}`).toEqual([]);
    }
  });

  it('answers to clients without showSensitiveInfo hold none of the secrets', () => {
    for (const { op, who, reply } of seen.filter((s) => s.who !== 'admin')) {
      for (const secret of allSecrets()) {
        if (!reply.text.includes(secret)) continue;
        // The one exception: add2 shows the password it generated, once, to whoever created it.
        const own =
          op === 'webUserAdd2' &&
          reply.json?.pass === secret &&
          Object.keys(reply.json).sort().join() === 'pass,status';
        expect(own, `${who} ${op} answer holds ${secret}: ${reply.text.slice(0, 300)}`).toBe(true);
      }
    }
    // The keys that carry secrets are absent altogether, not null.
    const plainLists = seen.filter((s) => s.who === 'plain' && (s.op === 'incomingUserList' || s.op === 'webUserList'));
    for (const { reply } of plainLists)
      for (const user of reply.json.userList) expect(user).not.toHaveProperty('password');
    for (const { reply } of seen.filter((s) => s.who === 'plain' && (s.op === 'backupList' || s.op === 'backupGet'))) {
      for (const d of reply.json.backup.destinations)
        for (const a of d.associations) expect(a.host).not.toHaveProperty('passwd');
    }
    for (const { reply } of seen.filter((s) => s.who === 'plain' && s.op === 'metadataGet')) {
      expect(reply.json.metadata.Access ?? {}).toEqual({});
    }
  });

  it('answers to a client with showSensitiveInfo hold secrets only where the spec allows', () => {
    const found = new Map<string, Set<string>>();
    for (const { op, reply } of seen.filter((s) => s.who === 'admin')) {
      if (!reply.json) continue;
      for (const [at, text] of leaves(reply.json)) {
        for (const secret of allSecrets()) {
          if (!text.includes(secret)) continue;
          const own = op === 'webUserAdd2' && at === 'pass';
          const allowed = own || (SENSITIVE_PATHS[op as OperationId]?.test(at) ?? false);
          expect(allowed, `admin ${op} answer holds ${secret} at ${at}`).toBe(true);
          if (op === 'metadataFields') {
            const index = Number(at.split('.')[1]);
            expect(reply.json.fields[index].type).toBe('password');
          }
          found.set(secret, (found.get(secret) ?? new Set()).add(`${op}:${at.replace(/\.\d+/g, '.*')}`));
        }
      }
    }
    // And they are there: each stored secret is shown where the spec says.
    const where = (secret: string) => [...(found.get(secret) ?? [])].sort();
    expect(where(SECRET.incomingByAdmin)).toEqual(['incomingUserList:userList.*.password']);
    expect(where(SECRET.incomingByPlain)).toEqual(['incomingUserList:userList.*.password']);
    expect(where(SECRET.webByAdmin)).toEqual(['webUserList:userList.*.password']);
    expect(where(SECRET.hostByAdmin)).toEqual([
      'backupGet:backup.destinations.*.associations.*.host.passwd',
      'backupList:backup.destinations.*.associations.*.host.passwd',
    ]);
    expect(where(SECRET.hostByPlain)).toEqual([
      'backupGet:backup.destinations.*.associations.*.host.passwd',
      'backupList:backup.destinations.*.associations.*.host.passwd',
    ]);
    // Secret host options: in the host's data, in clear (the key's lines written as one, `\n` escaped).
    for (const option of [SECRET.keyBody, SECRET.s3Secret, SECRET.passPhraseByPlain]) {
      expect(where(option)).toEqual([
        'backupGet:backup.destinations.*.associations.*.host.data',
        'backupList:backup.destinations.*.associations.*.host.data',
      ]);
    }
    const shown = seen.find((s) => s.who === 'admin' && s.op === 'backupGet' && s.reply.text.includes(SECRET.keyBody));
    const options = readOptions(shown!.reply.json.backup.destinations[0].associations[0].host.data);
    expect([options.get('sftp.privateKey'), options.get('s3.secretKey')]).toEqual([PRIVATE_KEY, SECRET.s3Secret]);
    expect(where(SECRET.metaByAdmin)).toEqual(['metadataGet:metadata.Access.vault_key']);
    expect(where(SECRET.fieldDefault)).toEqual(['metadataFields:fields.*.defaultValue']);
    expect(where(SECRET.lockedDefault)).toEqual([
      'metadataFields:fields.*.defaultValue',
      'metadataGet:metadata.Access.locked_key',
    ]);
    // Never shown to anyone: what a client without the permission tried to set, what was refused, client secrets.
    for (const never of [
      SECRET.metaByPlain,
      SECRET.metaRejected,
      SECRET.propertiesClient,
      SECRET.wrongGuess,
      ...generated.slice(0, 5),
    ]) {
      expect(where(never), never).toEqual([]);
    }
    // The web user deleted by `plain` is gone; the one `admin` created with add2 is listed with its password.
    expect(where(generated[5]!)).toEqual(['webUserAdd2:pass', 'webUserList:userList.*.password']);
  });

  it('secret host options are stored sealed: the hosts table holds none of them in clear', async () => {
    const rows = rowsOf<{ data: string }>(await h.db.execute(sql`select data from hosts`));
    const stored = rows.map((r) => r.data).join('\n');
    for (const secret of [SECRET.keyBody, SECRET.s3Secret, SECRET.passPhraseByPlain]) {
      expect(stored).not.toContain(secret);
    }
    expect(stored.match(/^(?:sftp\.privateKey|s3\.secretKey|sftp\.passPhrase) = "\{sealed\}v1:/gm)).toHaveLength(3);
  });

  // The source of a refused data file is quoted in the service error, which is logged: user info is masked.
  it('credentials inside a data-file source URL are not logged', async () => {
    const secret = mark('url-pass');
    const r = await h.call(
      'GET',
      `/v1/datafile/put?destination=LEAK_A&source=${encodeURIComponent(`https://user:${secret}@elsewhere.example/x`)}`,
      { auth: admin },
    );
    expect(r.status).toBe(500);
    expect(h.logLines.filter((l) => l.includes(secret))).toEqual([]);
  });
});

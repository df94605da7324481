import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_NAMES, SHOW_SENSITIVE_INFO } from '../../core/catalogue.ts';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { readOptions } from '../../core/hosts/options.ts';
import { sealStoredSecretOptions } from '../../core/hosts/seal-at-rest.ts';
import {
  isSealedValue,
  isSecretOption,
  METHOD_CREDENTIAL_OPTIONS,
  revealSecretOptions,
} from '../../core/hosts/secret-options.ts';
import { rowsOf } from '../../db/client.ts';
import { dataTransfers, transferHistory } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import type { TestHost } from '../support/backups.ts';
import { eventually, restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { ROOT } from '../support/processes.ts';
import { ACCOUNT, ACCOUNT_KEY, azuriteAvailability, startAzurite } from '../support/servers/azurite.ts';

/**
 * Every option a transfer method uses as a credential is a secret host option: sealed in the
 * hosts table, left out of answers to clients without showSensitiveInfo, never logged, and
 * still what the method sends with. The list is the methods' own (METHOD_CREDENTIAL_OPTIONS),
 * kept honest by reading the options the methods' code reads.
 */
const mark = (what: string) => `${what}-${Math.random().toString(36).slice(2, 10)}-Vq4`;

/** Every method's credential options, as `[method, key]`. */
const CREDENTIALS = Object.entries(METHOD_CREDENTIAL_OPTIONS).flatMap(([method, keys]) =>
  keys.map((key) => [method as TestHost['method'], key] as const),
);

// What the methods read that is no credential: settings, names, paths, the FTP login.
const NOT_CREDENTIALS = [
  'binding',
  'blockSize',
  'bucketName',
  'chmod',
  'connectionType',
  'containerName',
  'delay',
  'deleteOnRename',
  'enablePathStyleAccess',
  'error',
  'errorsEvery',
  'execCmd',
  'execCode',
  'fail',
  'fingerPrint',
  'ignoreCheck',
  'login',
  'md5Ext',
  'mkdirs',
  'multipartSize',
  'numBuffers',
  'numUploadThreads',
  'partSize',
  'path',
  'port',
  'postPutCmd',
  'prePutCmd',
  'prefix',
  'region',
  'scheme',
  'serverAliveInterval',
  'strict',
  'suffix',
  'url',
  'useMD5',
  'usePost',
  'usetmp',
];

/** The `module.` option keys the methods' code reads (`raw.get('key')`, and SFTP's `text('key')`). */
function optionKeysTheMethodsRead(): Set<string> {
  const keys = new Set<string>();
  for (const dir of ['functions/transfer-methods', 'core/dissemination']) {
    for (const name of fs.readdirSync(path.join(ROOT, dir)).filter((n) => n.endsWith('.ts'))) {
      const code = fs.readFileSync(path.join(ROOT, dir, name), 'utf8');
      for (const m of code.matchAll(/\b(?:raw\.get|text)\('([A-Za-z0-9_.-]+)'\)/g)) keys.add(m[1]!);
    }
  }
  return keys;
}

describe('the credentials the transfer methods use', () => {
  it('every option a method reads is either one of its credentials or declared none', () => {
    const read = optionKeysTheMethodsRead();
    const credentials = new Set<string>(CREDENTIALS.map(([, key]) => key));
    const unclassified = [...read].filter((key) => !credentials.has(key) && !NOT_CREDENTIALS.includes(key));
    expect(unclassified, 'options read but neither a credential nor declared none').toEqual([]);
    expect(
      [...credentials].filter((key) => !read.has(key)),
      'credentials no method reads',
    ).toEqual([]);
    expect(read.has('sasSubscriptionKey')).toBe(true);
  });

  it.each(CREDENTIALS)('%s.%s is a secret option', (method, key) => {
    expect(isSecretOption(`${method}.${key}`)).toBe(true);
  });

  it.each(NOT_CREDENTIALS)('%s is no secret', (key) => {
    expect(isSecretOption(`x.${key}`)).toBe(false);
  });
});

let h: Harness;
let admin: string;
let plain: string;
let ids = 91_000;

const rawData = async (hostid: number) =>
  rowsOf<{ data: string }>(await h.db.execute(sql`select data from hosts where hostid = ${hostid}`))[0]!.data;

const backupOf = (name: string, auth: string) => h.call('GET', `/v1/destination/backup/${name}`, { auth });

beforeAll(async () => {
  h = await createHarness();
  admin = await h.client('cred-admin', ['.*']);
  // Every permission by name except showSensitiveInfo (`.*` would grant it).
  plain = await h.client(
    'cred-plain',
    SERVICE_NAMES.filter((s) => s !== SHOW_SENSITIVE_INFO),
  );
});
afterAll(() => h?.close());

/** A value of the option's kind, unique to this test: the SAS gateway's URL carries its key. */
const credentialValue = (key: string) =>
  key === 'sasUrl' ? `https://gateway.example/sas?code=${mark('sas-code')}` : mark(key);

describe.each(CREDENTIALS)('%s.%s through the API', (method, key) => {
  const name = `CRED_${method}_${key}`.toUpperCase();
  const option = `${method}.${key}`;

  it('is stored sealed, left out without showSensitiveInfo, shown with it, never logged', async () => {
    const restored = credentialValue(key);
    const data = `${method}.mkdirs = "no"\n${option} = "${restored}"`;
    await restoreDestination(h, admin, name, [{ method, data }], { start: false });
    const backup = await backupOf(name, admin);
    const hostid = backup.json.backup.destinations[0].associations[0].host.hostid as number;
    const check = async (value: string) => {
      const stored = await rawData(hostid);
      expect(stored).not.toContain(value);
      expect(isSealedValue(readOptions(stored).get(option)!)).toBe(true);
      expect(readOptions(await revealSecretOptions(stored, h.ports.secrets)).get(option)).toBe(value);
      const hidden = await backupOf(name, plain);
      expect(hidden.status, hidden.text).toBe(200);
      expect(hidden.text).not.toContain(value);
      expect(hidden.json.backup.destinations[0].associations[0].host.data).toBe(`${method}.mkdirs = "no"`);
      const shown = await backupOf(name, admin);
      expect(readOptions(shown.json.backup.destinations[0].associations[0].host.data).get(option)).toBe(value);
    };
    await check(restored);

    // Set on its own (POST /v1/host/option): sealed as well.
    const set = credentialValue(key);
    const r = await h.call('POST', `/v1/host/option?hostid=${hostid}&name=${option}`, {
      auth: admin,
      form: { value: set },
    });
    expect(r.status, r.text).toBe(200);
    await check(set);
    for (const value of [restored, set]) expect(h.logLines.join('\n')).not.toContain(value);
  });

  it('held in clear by a host written before it was a secret, is sealed by the start-up step', async () => {
    const value = credentialValue(key);
    const clear = `${method}.port = "1"\n${option} = "${value}"`;
    const inserted = await h.db.execute(
      sql`insert into hosts (hostid, nickname, data) values (${++ids}, 'legacy', ${clear}) returning hostid`,
    );
    const hostid = Number(rowsOf<{ hostid: number }>(inserted)[0]!.hostid);
    expect(await sealStoredSecretOptions(h.ports)).toBeGreaterThanOrEqual(1);
    const sealed = await rawData(hostid);
    expect(sealed).not.toContain(value);
    expect(sealed.startsWith(`${method}.port = "1"\n${option} = "{sealed}v1:`)).toBe(true);
    expect(readOptions(await revealSecretOptions(sealed, h.ports.secrets)).get(option)).toBe(value);
  });
});

const azurite = azuriteAvailability();

describe.skipIf(!azurite.run)(`azure's SAS credentials at work ${azurite.reason}`, () => {
  it('a mover delivers with the sealed sasUrl and sasSubscriptionKey; a refused key is in no comment', async () => {
    const sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-sas-')));
    const blobs = await startAzurite();
    const subscriptionKey = mark('subscription-key');
    const code = mark('gateway-code');
    const gateway = http.createServer((req, res) => {
      const known = req.headers['ocp-apim-subscription-key'] === subscriptionKey && req.url?.endsWith(`code=${code}`);
      res.writeHead(known ? 200 : 401).end(known ? accountSas() : 'no');
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    const sasUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}/storage/sas?code=${code}`;
    const local = await createHarness({ sourceRoots: [sources], secretKey: new Uint8Array(randomBytes(32)) });
    let mover: Mover | undefined;
    try {
      await blobs.createContainer('box');
      const operator = await local.client('operator', ['.*']);
      mover = startMover(
        {
          ports: local.ports,
          methods: nodeTransferMethods({ fileRoots: [] }),
          sources: nodeSourceReader({ roots: [sources], hosts: [] }),
        },
        { name: 'sas', concurrency: 2, leaseMs: 3000, heartbeatMs: 200, pollMs: 40 },
      );
      const azureHost = (key: string): TestHost => ({
        method: 'azure',
        host: '',
        dir: 'box/in',
        data: `azure.sasSubscriptionKey = "${key}"\nazure.sasUrl = "${sasUrl}"\nazure.url = "${blobs.url}"`,
      });
      const put = async (destination: string) => {
        const bytes = randomBytes(50_000);
        const file = path.join(sources, `${destination}.bin`);
        fs.writeFileSync(file, bytes);
        const q = new URLSearchParams({ destination, source: file, target: `${destination}.bin` });
        const r = await local.call('GET', `/v1/datafile/put?${q}`, { auth: operator });
        expect(r.status, r.text).toBe(200);
        const [t] = await local.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
        return { id: t!.id, bytes };
      };
      const historyOf = async (id: number) =>
        local.db.select().from(transferHistory).where(eq(transferHistory.transferId, id));

      await restoreDestination(local, operator, 'SAS_OK', [azureHost(subscriptionKey)]);
      const stored = rowsOf<{ data: string }>(await local.db.execute(sql`select data from hosts`));
      for (const { data } of stored) for (const secret of [subscriptionKey, code]) expect(data).not.toContain(secret);
      const sent = await put('SAS_OK');
      await eventually(
        async () => {
          const [t] = await local.db.select().from(dataTransfers).where(eq(dataTransfers.id, sent.id));
          return t?.status === 'DONE' ? t : undefined;
        },
        30_000,
        'DONE',
      );
      expect((await blobs.blob('box', 'in/SAS_OK.bin'))?.equals(sent.bytes)).toBe(true);

      const wrongKey = mark('wrong-subscription-key');
      await restoreDestination(local, operator, 'SAS_REFUSED', [azureHost(wrongKey)]);
      const refused = await put('SAS_REFUSED');
      await eventually(
        async () => (await historyOf(refused.id)).find((r) => r.status === 'RETR' || r.status === 'STOP'),
        30_000,
        'a failure in the history',
      );
      const comments = (await historyOf(refused.id)).map((r) => r.comment ?? '').join('\n');
      expect(comments).toContain('401 Unauthorized');
      const everything = [comments, local.logLines.join('\n'), local.events.join('\n')].join('\n');
      for (const secret of [subscriptionKey, wrongKey, code]) expect(everything).not.toContain(secret);
    } finally {
      await mover?.stop(5000);
      await new Promise((resolve) => gateway.close(resolve));
      await blobs.stop();
      await local.close();
      fs.rmSync(sources, { recursive: true, force: true });
    }
  }, 120_000);
});

/** An account SAS for Azurite's account: blob service, every resource type, read and write. */
function accountSas(): string {
  const values = { sv: '2019-12-12', ss: 'b', srt: 'sco', sp: 'rwdlac', se: '2099-01-01T00:00:00Z', spr: 'https,http' };
  const toSign = [ACCOUNT, values.sp, values.ss, values.srt, '', values.se, '', values.spr, values.sv, ''].join('\n');
  const sig = createHmac('sha256', Buffer.from(ACCOUNT_KEY, 'base64')).update(toSign, 'utf8').digest('base64');
  return new URLSearchParams({ ...values, sig }).toString();
}

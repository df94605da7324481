import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretBox } from '../../core/common/crypto.ts';
import { END_OF_PROPERTIES, readOptions } from '../../core/hosts/options.ts';
import { sealStoredSecretOptions } from '../../core/hosts/seal-at-rest.ts';
import { isSealedValue, revealSecretOptions } from '../../core/hosts/secret-options.ts';
import { rowsOf } from '../../db/client.ts';
import { openPglite } from '../../db/pglite.ts';
import { destinationBackup } from '../support/backups.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { runMain } from '../support/in-process.ts';
import { scaled } from '../support/time.ts';

/** Secret host options are never stored in clear, whichever way they were written. */
const mark = (what: string) => `${what}-${Math.random().toString(36).slice(2, 10)}-Xk7`;
const KEY_BODY = mark('key-body');
const PRIVATE_KEY = `-----BEGIN OPENSSH PRIVATE KEY-----\n${KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----`;
const S3_SECRET = mark('s3-secret');
const TAIL = `${END_OF_PROPERTIES}\nsftp.passPhrase = "not an option: kept as it is"\n`;

let h: Harness;
let admin: string;
let ids = 70_000;

/** The `data` column as stored, read with SQL. */
const rawData = async (hostid: number) =>
  rowsOf<{ data: string }>(await h.db.execute(sql`select data from hosts where hostid = ${hostid}`))[0]!.data;

async function restore(name: string, data: string) {
  const body = destinationBackup(name, [{ method: 'sftp', data }], { nextHostId: () => ++ids });
  const r = await h.call('PUT', '/v1/destination/backup', { auth: admin, body });
  expect(r.status, r.text).toBe(200);
  const got = await h.call('GET', `/v1/destination/backup/${name}`, { auth: admin });
  return got.json.backup.destinations[0].associations[0].host.hostid as number;
}

beforeAll(async () => {
  h = await createHarness();
  admin = await h.client('admin', ['.*']);
});
afterAll(() => h.close());

describe('secret host options at rest', () => {
  it('a restored host keeps its secret options sealed in the hosts table, the rest byte for byte', async () => {
    const data = `sftp.port = "22"\nsftp.privateKey = "${PRIVATE_KEY}"\ns3.secretKey = "${S3_SECRET}"\n${TAIL}`;
    const hostid = await restore('AT_REST_RESTORE', data);
    const stored = await rawData(hostid);
    for (const clear of [KEY_BODY, S3_SECRET]) expect(stored).not.toContain(clear);
    const lines = stored.split('\n');
    expect(lines[0]).toBe('sftp.port = "22"');
    expect(lines[1]).toMatch(/^sftp\.privateKey = "\{sealed\}v1:[^"]+"$/);
    expect(lines[2]).toMatch(/^s3\.secretKey = "\{sealed\}v1:[^"]+"$/);
    expect(lines.slice(3).join('\n')).toBe(TAIL);
    const options = readOptions(await revealSecretOptions(stored, h.ports.secrets));
    expect([options.get('sftp.privateKey'), options.get('s3.secretKey')]).toEqual([PRIVATE_KEY, S3_SECRET]);
  });

  it('POST /v1/host/option stores a secret option sealed and any other option in clear', async () => {
    const hostid = await restore('AT_REST_OPTION', 'sftp.port = "22"\n');
    const token = mark('auth-token');
    const set = (name: string, value: string) =>
      h.call('POST', `/v1/host/option?hostid=${hostid}&name=${name}`, { auth: admin, form: { value } });
    expect((await set('http.authheader', `Authorization: Bearer ${token}`)).status).toBe(200);
    expect((await set('ftp.password', S3_SECRET)).status).toBe(200);
    expect((await set('sftp.mkdirs', 'no')).status).toBe(200);
    const stored = await rawData(hostid);
    expect(stored).not.toContain(token);
    expect(stored).not.toContain(S3_SECRET);
    expect(stored).toContain('sftp.mkdirs = "no"');
    const options = readOptions(stored);
    expect(isSealedValue(options.get('http.authheader')!)).toBe(true);
    expect(isSealedValue(options.get('ftp.password')!)).toBe(true);
    // Set again: the new value replaces the old one, sealed anew.
    expect((await set('ftp.password', 'rotated-secret')).status).toBe(200);
    const rotated = readOptions(await revealSecretOptions(await rawData(hostid), h.ports.secrets));
    expect(rotated.get('ftp.password')).toBe('rotated-secret');
    expect(rotated.get('http.authheader')).toBe(`Authorization: Bearer ${token}`);
  });

  it('a value written in clear straight into the table is sealed by the start-up step, once', async () => {
    const clear = `ftp.password = "${S3_SECRET}"\nftp.port = "21"\nsftp.privateKey = "${PRIVATE_KEY}"\n${TAIL}`;
    const inserted = await h.db.execute(
      sql`insert into hosts (nickname, data) values ('legacy', ${clear}) returning hostid`,
    );
    const hostid = Number(rowsOf<{ hostid: number }>(inserted)[0]!.hostid);
    expect(await rawData(hostid)).toBe(clear);

    expect(await sealStoredSecretOptions(h.ports)).toBe(1);
    const sealed = await rawData(hostid);
    expect(sealed).not.toContain(S3_SECRET);
    expect(sealed).not.toContain(KEY_BODY);
    expect(sealed).toContain('ftp.port = "21"\n');
    expect(sealed.endsWith(TAIL)).toBe(true);
    expect(Object.fromEntries(readOptions(await revealSecretOptions(sealed, h.ports.secrets)))).toEqual(
      Object.fromEntries(readOptions(clear)),
    );
    // Idempotent: nothing left to seal, nothing rewritten.
    expect(await sealStoredSecretOptions(h.ports)).toBe(0);
    expect(await rawData(hostid)).toBe(sealed);
  });
});

describe('ecpds-edge migrate', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-seal-migrate-'));
  const env = { ECPDS_DATA_DIR: dir };
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it(
    'seals the secret options a host holds in clear',
    async () => {
      expect((await runMain(['migrate'], { env })).status).toBe(0);
      const clear = `sftp.passPhrase = "${S3_SECRET}"\nsftp.port = "22"`;
      const before = await openPglite(path.join(dir, 'pgdata'));
      await before.db.execute(sql`insert into hosts (hostid, nickname, data) values (1, 'old', ${clear})`);
      await before.close();

      const r = await runMain(['migrate'], { env });
      expect([r.status, r.stdout]).toEqual([0, 'Database migrated.\n']);
      expect(r.stderr).toContain('host secret options sealed');
      expect(r.stderr).not.toContain(S3_SECRET);

      const after = await openPglite(path.join(dir, 'pgdata'));
      try {
        const rows = rowsOf<{ data: string }>(await after.db.execute(sql`select data from hosts where hostid = 1`));
        const stored = rows[0]!.data;
        expect(stored).not.toContain(S3_SECRET);
        expect(stored).toMatch(/^sftp\.passPhrase = "\{sealed\}v1:[^"]+"\nsftp\.port = "22"$/);
        const box = SecretBox.fromBase64(fs.readFileSync(path.join(dir, 'secret.key'), 'utf8'));
        expect(readOptions(await revealSecretOptions(stored, box)).get('sftp.passPhrase')).toBe(S3_SECRET);
      } finally {
        await after.close();
      }
    },
    scaled(120_000),
  );
});

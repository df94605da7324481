import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_NAMES, SHOW_SENSITIVE_INFO } from '../../core/catalogue.ts';
import { END_OF_PROPERTIES, readOptions } from '../../core/hosts/options.ts';
import { rowsOf } from '../../db/client.ts';
import { destinationBackup } from '../support/backups.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/**
 * Secret host options in backups: left out for a client without showSensitiveInfo, shown in clear
 * to one with it, and sealed again by whichever system a backup is restored to.
 */
const mark = (what: string) => `${what}-${Math.random().toString(36).slice(2, 10)}-Jp5`;
const KEY_BODY = mark('key-body');
const PRIVATE_KEY = `-----BEGIN OPENSSH PRIVATE KEY-----\n${KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----`;
const PASS_PHRASE = mark('pass-phrase');
const S3_SECRET = mark('s3-secret');
const CLEAR = [KEY_BODY, PASS_PHRASE, S3_SECRET];
const TAIL = `${END_OF_PROPERTIES}\n#!/bin/sh\necho "sftp.password = not an option"\n`;
const DATA =
  `sftp.passPhrase = "${PASS_PHRASE}"\nsftp.port = "2222"\n` +
  `sftp.privateKey = "${PRIVATE_KEY}"\ns3.secretKey = ${S3_SECRET}\n${TAIL}`;
const PUBLIC = `sftp.port = "2222"\n${TAIL}`;

let a: Harness;
let b: Harness;
let adminA: string;
let plainA: string;
let adminB: string;
let ids = 80_000;

const hostOf = (reply: { json: any }, destination: string) =>
  reply.json.backup.destinations.find((d: any) => d.destination.name === destination).associations[0].host;
const backupOf = (h: Harness, auth: string, destination: string) =>
  h.call('GET', `/v1/destination/backup/${destination}`, { auth });
const restore = async (h: Harness, auth: string, body: unknown, query = '') => {
  const r = await h.call('PUT', `/v1/destination/backup${query}`, { auth, body });
  expect(r.status, r.text).toBe(200);
  return r.json.message as string;
};
const storedData = async (h: Harness, hostid: number) =>
  rowsOf<{ data: string }>(await h.db.execute(sql`select data from hosts where hostid = ${hostid}`))[0]!.data;
/** A backup answer as a body for another destination: its name and host nickname changed. */
function renamed(reply: { json: any }, name: string, nickname: string) {
  const body = structuredClone({ backup: reply.json.backup });
  body.backup.destinations[0].destination.name = name;
  body.backup.destinations[0].associations[0].host.nickname = nickname;
  return body;
}

beforeAll(async () => {
  a = await createHarness();
  b = await createHarness();
  adminA = await a.client('admin', ['.*']);
  adminB = await b.client('admin', ['.*']);
  plainA = await a.client(
    'plain',
    SERVICE_NAMES.filter((s) => s !== SHOW_SENSITIVE_INFO),
  );
  const body = destinationBackup('SECRETS_A', [{ method: 'sftp', data: DATA }], { nextHostId: () => ++ids });
  await restore(a, adminA, body);
});
afterAll(async () => {
  await a?.close();
  await b?.close();
});

describe('secret host options in backups', () => {
  it('are left out, lines and all, without showSensitiveInfo', async () => {
    const one = await backupOf(a, plainA, 'SECRETS_A');
    const all = await a.call('GET', '/v1/destination/backup', { auth: plainA });
    for (const reply of [one, all]) {
      expect(reply.status).toBe(200);
      expect(hostOf(reply, 'SECRETS_A').data).toBe(PUBLIC);
      for (const clear of CLEAR) expect(reply.text).not.toContain(clear);
      expect(reply.text).not.toContain('{sealed}');
    }
  });

  it('are shown in clear with showSensitiveInfo, the rest of the text as it was', async () => {
    const reply = await backupOf(a, adminA, 'SECRETS_A');
    const data: string = hostOf(reply, 'SECRETS_A').data;
    expect(Object.fromEntries(readOptions(data))).toEqual(Object.fromEntries(readOptions(DATA)));
    expect(data.split('\n')[1]).toBe('sftp.port = "2222"');
    expect(data.endsWith(TAIL)).toBe(true);
    expect(reply.text).not.toContain('{sealed}');
  });

  it("a backup shown in clear, restored on another system, is sealed there with that system's key", async () => {
    const shown = await backupOf(a, adminA, 'SECRETS_A');
    expect(await restore(b, adminB, { backup: shown.json.backup })).toBe('Number of Destination(s) created: 1');
    const back = await backupOf(b, adminB, 'SECRETS_A');
    const host = hostOf(back, 'SECRETS_A');
    expect(Object.fromEntries(readOptions(host.data))).toEqual(Object.fromEntries(readOptions(DATA)));
    const stored = await storedData(b, host.hostid);
    for (const clear of CLEAR) expect(stored).not.toContain(clear);
    expect(stored.match(/\{sealed\}/g)).toHaveLength(3);
    // And sent back again, the same text comes back: the round trip is stable.
    const again = renamed(back, 'SECRETS_A2', 'secrets-a2');
    await restore(b, adminB, again);
    expect(hostOf(await backupOf(b, adminB, 'SECRETS_A2'), 'SECRETS_A2').data).toBe(host.data);
  });

  it('a backup read without showSensitiveInfo restores a host without the secret options', async () => {
    const plain = await backupOf(a, plainA, 'SECRETS_A');
    await restore(b, adminB, renamed(plain, 'SECRETS_COPY', 'secrets-copy'));
    const host = hostOf(await backupOf(b, adminB, 'SECRETS_COPY'), 'SECRETS_COPY');
    expect(host.data).toBe(PUBLIC);
    expect(await storedData(b, host.hostid)).toBe(PUBLIC);
  });

  it('a shared host reused by its nickname keeps its stored secrets', async () => {
    const plain = await backupOf(a, plainA, 'SECRETS_A');
    const body = structuredClone({ backup: plain.json.backup });
    body.backup.destinations[0].destination.name = 'SECRETS_SHARED';
    await restore(a, plainA, body);
    const shared = hostOf(await backupOf(a, adminA, 'SECRETS_SHARED'), 'SECRETS_SHARED');
    expect(shared.hostid).toBe(hostOf(await backupOf(a, adminA, 'SECRETS_A'), 'SECRETS_A').hostid);
    expect(Object.fromEntries(readOptions(shared.data))).toEqual(Object.fromEntries(readOptions(DATA)));
    // With copySharedHost a new host is made from the backup as given: without them.
    body.backup.destinations[0].destination.name = 'SECRETS_COPIED';
    await restore(a, plainA, body, '?copySharedHost=true');
    const copied = hostOf(await backupOf(a, adminA, 'SECRETS_COPIED'), 'SECRETS_COPIED');
    expect(copied.hostid).not.toBe(shared.hostid);
    expect(copied.data).toBe(PUBLIC);
  });

  it('a restore by a client without showSensitiveInfo seals what it sends, and shows it no more', async () => {
    const token = mark('plain-token');
    const body = destinationBackup(
      'SECRETS_BY_PLAIN',
      [{ method: 'http', data: `http.authheader = "Authorization: Bearer ${token}"\nhttp.scheme = "https"` }],
      { nextHostId: () => ++ids },
    );
    await restore(a, plainA, body);
    const plain = hostOf(await backupOf(a, plainA, 'SECRETS_BY_PLAIN'), 'SECRETS_BY_PLAIN');
    expect(plain.data).toBe('http.scheme = "https"');
    expect(await storedData(a, plain.hostid)).not.toContain(token);
    const admin = hostOf(await backupOf(a, adminA, 'SECRETS_BY_PLAIN'), 'SECRETS_BY_PLAIN');
    expect(readOptions(admin.data).get('http.authheader')).toBe(`Authorization: Bearer ${token}`);
  });
});

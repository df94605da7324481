import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapWebAdmin } from '../../../core/console/sign-in.ts';
import { parseAuthorizedKey } from '../../../core/portal/authorized-keys.ts';
import { parseConfig } from '../../../functions/node/config.ts';
import { openRuntime } from '../../../functions/node/runtime.ts';
import { FormAgent } from '../../support/form-agent.ts';
import { createHarness, type Harness } from '../../support/harness.ts';
import { runMain } from '../../support/in-process.ts';
import { removeTempDirs, tempDir } from '../../support/processes.ts';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';

/** Incoming users' SFTP keys: the key lines taken, `ecpds-edge incoming key`, and the console's section. */

const dir = tempDir('ecpds-portal-keys-');
afterAll(() => removeTempDirs());

/** The public line of a new key of this type, made by ssh-keygen. */
function keyLine(type: string, bits?: number) {
  const file = path.join(dir, `${type}-${bits ?? ''}-${Math.random().toString(36).slice(2)}`);
  execFileSync('ssh-keygen', [
    '-q',
    '-t',
    type,
    ...(bits ? ['-b', String(bits)] : []),
    '-N',
    '',
    '-C',
    'me@host',
    '-f',
    file,
  ]);
  const line = fs.readFileSync(`${file}.pub`, 'utf8').trim();
  const fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${file}.pub`], { encoding: 'utf8' });
  return { line, fingerprint: fingerprint.split(' ')[1]! };
}

describe('an OpenSSH public key line', needs('ssh-keygen'), () => {
  it('is read with its algorithm, blob, comment and the fingerprint ssh-keygen prints', () => {
    for (const [type, bits] of [['ed25519'], ['ecdsa', 256], ['ecdsa', 521], ['rsa', 3072]] as const) {
      const { line, fingerprint } = keyLine(type, bits);
      const key = parseAuthorizedKey(line);
      expect(key.fingerprint, type).toBe(fingerprint);
      expect(key).toMatchObject({ algorithm: line.split(' ')[0], blob: line.split(' ')[1], comment: 'me@host' });
    }
  });

  it('is refused with a reason when it is not a key the server can check', () => {
    const ed = keyLine('ed25519').line;
    const [, blob] = ed.split(' ');
    const cases: Array<[string, RegExp]> = [
      ['', /public key line is expected/],
      ['ssh-dss AAAAB3NzaC1kc3M= x', /Unsupported public key type 'ssh-dss'/],
      [`from="10.0.0.1" ${ed}`, /Unsupported public key type/],
      ['ssh-ed25519 not*base64', /not valid base64/],
      [`ssh-rsa ${blob}`, /of type 'ssh-ed25519', not ssh-rsa/],
      [`ssh-ed25519 ${blob!.slice(0, 40)}`, /32-byte key is expected/],
      [keyLine('rsa', 1024).line, /1024 bits is too short/],
      [`${ed}\n${ed}`, /One public key line/],
    ];
    for (const [line, reason] of cases) expect(() => parseAuthorizedKey(line), line).toThrow(reason);
  });
});

describe('ecpds-edge incoming key', needs('ssh-keygen'), () => {
  const env = { ECPDS_DATA_DIR: path.join(dir, 'data') };
  const cli = (...args: string[]) => runMain(args, { env });
  beforeAll(async () => {
    const runtime = await openRuntime(parseConfig(env), { info() {}, warn() {}, error() {} }, { hold: false });
    await runtime.ports.repos.incomingUsers.insert(
      {
        id: 'alice',
        email: 'alice@example.org',
        iso: 'gb',
        portalService: 'standard-login',
        active: true,
        passwordSealed: null,
        lastLoginDate: null,
      },
      new Date(),
    );
    await runtime.close();
  }, scaled(120_000));

  it(
    'adds, lists and removes a key by its fingerprint, and refuses a bad line or a key twice',
    async () => {
      const { line, fingerprint } = keyLine('ed25519');
      expect((await cli('incoming', 'key', 'alice')).stdout).toMatch(/has no public keys/);
      const added = await cli('incoming', 'key', 'alice', 'add', ...line.split(' '));
      expect(added.status, added.stderr).toBe(0);
      expect(added.stdout).toBe(`Key ${fingerprint} (ssh-ed25519) added to 'alice'.\n`);
      const twice = await cli('incoming', 'key', 'alice', 'add', line);
      expect(twice.status).not.toBe(0);
      expect(twice.stderr).toMatch(/already has the key/);
      const bad = await cli('incoming', 'key', 'alice', 'add', 'ssh-ed25519', 'AAAA');
      expect(bad.status).not.toBe(0);
      expect(bad.stderr).toMatch(/Invalid ssh-ed25519 public key/);
      expect((await cli('incoming', 'key', 'alice', 'list')).stdout).toBe(`${fingerprint} me@host (ssh-ed25519)\n`);
      const removed = await cli('incoming', 'key', 'alice', 'remove', fingerprint);
      expect(removed.status, removed.stderr).toBe(0);
      expect((await cli('incoming', 'key', 'alice', 'remove', fingerprint)).stderr).toMatch(/has no key/);
      expect((await cli('incoming', 'key', 'ghost', 'list')).stderr).toMatch(/not found/);
    },
    scaled(120_000),
  );
});

describe("the console's incoming user page", needs('ssh-keygen'), () => {
  let h: Harness;
  let admin: FormAgent;
  const PAGE = '/console/incoming/alice';
  beforeAll(async () => {
    h = await createHarness();
    const api = await h.client('api-admin', ['.*']);
    const q = new URLSearchParams({ id: 'alice', email: 'a@example.org', iso: 'gb', pass: 'Secret-1', active: 'true' });
    expect((await h.call('POST', `/v1/incoming/user/add?${q}`, { auth: api })).status).toBe(200);
    const password = (await bootstrapWebAdmin(h.ports))!;
    admin = new FormAgent(h.app, 'keys-console');
    await admin.submit('/console/login', '/console/login', { username: 'admin', password });
  });
  afterAll(() => h?.close());

  it('shows the keys by fingerprint, adds one (audited) and removes one', async () => {
    const { line, fingerprint } = keyLine('ed25519');
    expect((await admin.get(PAGE)).text).toContain('No key: the user logs in to SFTP with its password only.');
    const add = await admin.submit(PAGE, `${PAGE}/keys`, { key: line });
    expect([add.status, add.location]).toEqual([303, `${PAGE}?done=keyAdded#keys`]);
    const page = await admin.get(add.location!);
    expect(page.text).toContain(`<code>${fingerprint}</code>`);
    expect((await h.ports.repos.console.auditTrail(10))[0]).toMatchObject({
      action: 'add portal key',
      target: 'alice',
    });
    const bad = await admin.submit(PAGE, `${PAGE}/keys`, { key: 'ssh-ed25519 AAAA' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('Invalid ssh-ed25519 public key');
    const remove = await admin.submit(PAGE, `${PAGE}/keys/remove`, { fingerprint });
    expect(remove.status).toBe(303);
    expect(await h.ports.repos.portal.authorizedKeys('alice')).toEqual([]);
  });
});

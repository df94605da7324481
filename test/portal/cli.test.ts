import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Base64 } from '../../core/common/crypto.ts';
import type { Ports } from '../../core/ports.ts';
import { parseConfig } from '../../functions/node/config.ts';
import { openRuntime } from '../../functions/node/runtime.ts';
import { freshPostgres, onPostgres } from '../support/database.ts';
import { runMain } from '../support/in-process.ts';
import { removeTempDirs, tempDir } from '../support/processes.ts';

/**
 * `ecpds-edge incoming permission|option|subscriber` through main() in this process: on an embedded
 * database in a temp dir, or on a fresh Postgres database when TEST_DATABASE_URL is set.
 */
const LONG = 120_000; // each command opens the database
const quiet = { info: () => {}, warn: () => {}, error: () => {} };
let env: Record<string, string>;
let dropDatabase = async () => {};

async function withPorts<T>(work: (ports: Ports) => Promise<T>) {
  const runtime = await openRuntime(parseConfig(env), quiet, { hold: false });
  try {
    return await work(runtime.ports);
  } finally {
    await runtime.close();
  }
}
const cli = (...args: string[]) => runMain(args, { env });
const trail = () => withPorts((ports) => ports.repos.console.auditTrail(100));
const auditRows = async (count: number) =>
  (await trail()).slice(0, count).map((a) => [a.actor, a.action, a.targetKind, a.target, a.detail]);

let verified: number;
let unverified: number;
let elsewhere: number;

beforeAll(async () => {
  if (onPostgres()) {
    const db = await freshPostgres(process.env.TEST_DATABASE_URL!);
    dropDatabase = db.close;
    env = { DATABASE_URL: db.url, ECPDS_SECRET_KEY: Buffer.alloc(32, 3).toString('base64') };
  } else {
    env = { ECPDS_DATA_DIR: tempDir('ecpds-portal-cli-') };
  }
  await withPorts(async (ports) => {
    const at = new Date();
    for (const [id, portalService] of [
      ['alice', 'standard-login'],
      ['selfie', 'self-service'],
      ['other', 'self-service'],
    ] as const) {
      await ports.repos.incomingUsers.insert(
        {
          id,
          email: `${id}@example.org`,
          iso: 'gb',
          portalService,
          active: true,
          passwordSealed: null,
          lastLoginDate: null,
        },
        at,
      );
    }
    const subscriber = async (userId: string, email: string) =>
      (await ports.repos.portal.addSubscriber(
        { userId, name: email.split('@')[0]!, email, iso: 'fr', tokenHash: sha256Base64(email), tokenExpiresAt: at },
        at,
      ))!;
    verified = await subscriber('selfie', 'vera@example.org');
    unverified = await subscriber('selfie', 'ursula@example.org');
    elsewhere = await subscriber('other', 'otto@example.org');
    for (const id of [verified, elsewhere]) {
      await ports.repos.portal.changeSubscriber(id, ['unverified'], { status: 'verified', at, clearToken: true });
    }
  });
}, LONG);
afterAll(async () => {
  removeTempDirs();
  await dropDatabase();
});

describe('ecpds-edge incoming permission', () => {
  it(
    'lists, grants and revokes portal operations, each change audited with what it changed',
    async () => {
      const list = await cli('incoming', 'permission', 'alice');
      expect(list.status, list.stderr).toBe(0);
      expect(JSON.parse(list.stdout)).toEqual(['dir', 'get', 'mtime', 'size']);

      const grant = await cli('incoming', 'permission', 'alice', 'grant', 'PUT', 'delete', 'put');
      expect(grant.status, grant.stderr).toBe(0);
      expect(grant.stdout).toBe("Portal permissions of 'alice': dir, get, mtime, size, put, delete.\n");
      const revoke = await cli('incoming', 'permission', 'alice', 'revoke', 'mtime', 'rmdir');
      expect(revoke.status, revoke.stderr).toBe(0);
      expect(revoke.stdout).toBe("Portal permissions of 'alice': dir, get, size, put, delete.\n");
      expect(JSON.parse((await cli('incoming', 'permission', 'alice')).stdout)).toEqual([
        'delete',
        'dir',
        'get',
        'put',
        'size',
      ]);
      expect(await auditRows(2)).toEqual([
        ['cli', 'change portal permissions', 'incoming user', 'alice', 'revoked mtime'],
        ['cli', 'change portal permissions', 'incoming user', 'alice', 'granted put, delete'],
      ]);

      // Granting what is held changes nothing, and records nothing.
      const before = await trail();
      const again = await cli('incoming', 'permission', 'alice', 'grant', 'get');
      expect(again.status, again.stderr).toBe(0);
      expect(await trail()).toEqual(before);
    },
    LONG,
  );

  it(
    'says when no permission is left: the user cannot log in',
    async () => {
      const r = await cli('incoming', 'permission', 'other', 'revoke', 'dir', 'get', 'mtime', 'size');
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toBe("Portal permissions of 'other': none (the user cannot log in).\n");
      expect(JSON.parse((await cli('incoming', 'permission', 'other')).stdout)).toEqual([]);
    },
    LONG,
  );

  it(
    'refuses an unknown user or operation with a clear message, and changes nothing',
    async () => {
      const before = await trail();
      const ghost = await cli('incoming', 'permission', 'ghost', 'grant', 'put');
      expect([ghost.status, ghost.stderr]).toEqual([1, 'ecpds-edge: Incoming user ghost not found\n']);
      const listGhost = await cli('incoming', 'permission', 'ghost');
      expect([listGhost.status, listGhost.stderr]).toEqual([1, 'ecpds-edge: Incoming user ghost not found\n']);
      const bad = await cli('incoming', 'permission', 'alice', 'grant', 'put', 'chmod', 'x');
      expect(bad.status).toBe(1);
      expect(bad.stderr).toBe(
        "ecpds-edge: Unknown portal operations 'chmod', 'x' " +
          '(one of dir, get, mtime, size, put, delete, mkdir, rename, rmdir expected)\n',
      );
      expect(await trail()).toEqual(before);
    },
    LONG,
  );
});

describe('ecpds-edge incoming option', () => {
  it(
    'sets, shows, lists and removes options, each change audited',
    async () => {
      expect(JSON.parse((await cli('incoming', 'option', 'alice')).stdout)).toEqual({});
      const set = await cli('incoming', 'option', 'alice', 'portal.maxConnections', '5');
      expect(set.status, set.stderr).toBe(0);
      expect(set.stdout).toBe("Option portal.maxConnections of 'alice' set to 5.\n");
      // A negative number is a value, not an option of the command.
      const unlimited = await cli('incoming', 'option', 'alice', 'portal.maxConnections', '-1');
      expect(unlimited.stdout).toBe("Option portal.maxConnections of 'alice' set to -1.\n");
      const same = await cli('incoming', 'option', 'alice', 'portal.maxConnections', '-1');
      expect(same.stdout).toBe("Option portal.maxConnections of 'alice' is already -1.\n");
      await cli('incoming', 'option', 'alice', 'portal.getPathPermRegex', 'MO_.*/.*\\.grib');
      await cli('incoming', 'option', 'alice', 'portal.downloadPeriod', 'P1D');

      const shown = await cli('incoming', 'option', 'alice', 'portal.maxConnections');
      expect([shown.status, shown.stdout]).toEqual([0, '-1\n']);
      expect(JSON.parse((await cli('incoming', 'option', 'alice')).stdout)).toEqual({
        'portal.downloadPeriod': 'P1D',
        'portal.getPathPermRegex': 'MO_.*/.*\\.grib',
        'portal.maxConnections': '-1',
      });

      const unset = await cli('incoming', 'option', 'alice', 'portal.maxConnections', '--unset');
      expect(unset.stdout).toBe("Option portal.maxConnections of 'alice' removed.\n");
      const unsetAgain = await cli('incoming', 'option', 'alice', '--unset', 'portal.maxConnections');
      expect(unsetAgain.stdout).toBe("Option portal.maxConnections of 'alice' was not set.\n");
      // Like `git config`: an option that is not set prints nothing and exits 1.
      const notSet = await cli('incoming', 'option', 'alice', 'portal.maxConnections');
      expect(notSet).toEqual({
        status: 1,
        stdout: '',
        stderr:
          "ecpds-edge: portal.maxConnections is not set for 'alice': the default applies " +
          '(an integer; below 0: unlimited (default 10))\n',
      });

      expect(await auditRows(5)).toEqual([
        ['cli', 'remove portal option', 'incoming user', 'alice', 'portal.maxConnections'],
        ['cli', 'set portal option', 'incoming user', 'alice', 'portal.downloadPeriod=P1D'],
        ['cli', 'set portal option', 'incoming user', 'alice', 'portal.getPathPermRegex=MO_.*/.*\\.grib'],
        ['cli', 'set portal option', 'incoming user', 'alice', 'portal.maxConnections=-1'],
        ['cli', 'set portal option', 'incoming user', 'alice', 'portal.maxConnections=5'],
      ]);
    },
    LONG,
  );

  it(
    'refuses a bad value, an unknown option or a contradiction before it opens the database',
    async () => {
      const unreachable = {
        DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
        ECPDS_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
      };
      for (const [args, message] of [
        [['alice', 'portal.maxConnections', 'ten'], "Invalid value for portal.maxConnections: 'ten'"],
        [['alice', 'portal.downloadPeriod', '0s'], "Invalid value for portal.downloadPeriod: '0s'"],
        [['alice', 'portal.registrationAutoApprove', 'yes'], '(true or false expected)'],
        [['alice', 'portal.getPathPermRegex', '(unclosed'], 'a regular expression matching whole paths expected'],
        [['alice', 'portal.maxConnection', '3'], 'Unknown portal option portal.maxConnection; known: '],
        [['alice', 'portal.maxConnection'], 'Unknown portal option portal.maxConnection'],
        [['alice', 'portal.maxConnections', '3', '--unset'], 'give a <value> or --unset, not both'],
        [['alice', '--unset'], '--unset needs the <name> of an option'],
        [['has space'], "'has space' is not an incoming user id"],
        [[], 'usage: ecpds-edge incoming option <id>'],
      ] as const) {
        const r = await runMain(['incoming', 'option', ...args], { env: unreachable });
        expect(r.status, args.join(' ')).toBe(1);
        expect(r.stderr, args.join(' ')).toContain(message);
        expect(r.stderr).not.toMatch(/ECONNREFUSED/);
      }
      const ghost = await cli('incoming', 'option', 'ghost', 'portal.maxConnections', '3');
      expect([ghost.status, ghost.stderr]).toEqual([1, 'ecpds-edge: Incoming user ghost not found\n']);
    },
    LONG,
  );
});

describe('ecpds-edge incoming subscriber', () => {
  it(
    "lists a user's subscribers without any hash",
    async () => {
      const r = await cli('incoming', 'subscriber', 'selfie', 'list');
      expect(r.status, r.stderr).toBe(0);
      const listed = JSON.parse(r.stdout);
      expect(listed.map((s: { id: number; email: string; status: string }) => [s.id, s.email, s.status])).toEqual([
        [verified, 'vera@example.org', 'verified'],
        [unverified, 'ursula@example.org', 'unverified'],
      ]);
      expect(r.stdout).not.toMatch(/hash/i);
      expect((await cli('incoming', 'subscriber', 'selfie')).stdout).toBe(r.stdout);
    },
    LONG,
  );

  it(
    'cannot approve without SMTP, and says so; the subscriber stays verified, nothing is audited',
    async () => {
      const before = await trail();
      const r = await cli('incoming', 'subscriber', 'selfie', 'approve', String(verified));
      expect(r.status).toBe(1);
      expect(r.stderr).toBe(
        `ecpds-edge: cannot approve subscriber ${verified}: approval e-mails its password, and no SMTP server ` +
          'is configured (ECPDS_SMTP_URL, ECPDS_MAIL_FROM); it stays verified\n',
      );
      expect(await withPorts((ports) => ports.repos.portal.subscriber(verified))).toMatchObject({ status: 'verified' });
      expect(await trail()).toEqual(before);
    },
    LONG,
  );

  it(
    "revokes a subscriber once, audited; never another user's",
    async () => {
      const foreign = await cli('incoming', 'subscriber', 'selfie', 'revoke', String(elsewhere));
      expect([foreign.status, foreign.stderr]).toEqual([
        1,
        `ecpds-edge: Subscriber ${elsewhere} of incoming user selfie not found\n`,
      ]);
      expect(await withPorts((ports) => ports.repos.portal.subscriber(elsewhere))).toMatchObject({
        status: 'verified',
      });

      const r = await cli('incoming', 'subscriber', 'selfie', 'revoke', String(unverified));
      expect([r.status, r.stdout]).toEqual([0, `Subscriber ${unverified} of 'selfie' revoked.\n`]);
      expect(await auditRows(1)).toEqual([
        ['cli', 'revoke portal subscriber', 'incoming user', 'selfie', `subscriber ${unverified} <ursula@example.org>`],
      ]);
      const again = await cli('incoming', 'subscriber', 'selfie', 'revoke', String(unverified));
      expect([again.status, again.stderr]).toEqual([1, `ecpds-edge: Subscriber ${unverified} is already revoked\n`]);
      const approve = await cli('incoming', 'subscriber', 'selfie', 'approve', String(unverified));
      expect(approve.status).toBe(1);
      expect(approve.stderr).toContain(
        `Subscriber ${unverified} is revoked: only a verified subscriber can be approved`,
      );
    },
    LONG,
  );

  it('checks the action and the subscriber number before it opens the database', async () => {
    const unreachable = {
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
      ECPDS_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
    };
    for (const [args, message] of [
      [['selfie', 'approve'], 'subscriber approve needs the number of a subscriber'],
      [['selfie', 'revoke', 'x1'], 'subscriber revoke needs the number of a subscriber'],
      [['selfie', 'ban', '3'], "unknown subscriber action 'ban' (list, approve or revoke expected)"],
      [['selfie', 'list', '3'], 'list takes no <subscriberId>'],
    ] as const) {
      const r = await runMain(['incoming', 'subscriber', ...args], { env: unreachable });
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr, args.join(' ')).toContain(message);
    }
  });
});

describe('help', () => {
  it('lists the incoming commands with their usage, and the options with what each expects', async () => {
    const top = await runMain(['--help'], { env: {} });
    expect(top.stdout).toMatch(/^ {2}incoming <command> +incoming users' data portal access/m);
    const group = await runMain(['incoming', '--help'], { env: {} });
    expect(group.status).toBe(0);
    expect(group.stdout).toMatch(/^ {2}permission <id> \[grant\|revoke <operation>\.\.\.\] +list the portal/m);
    expect(group.stdout).toMatch(/^ {2}option <id> \[<name> \[<value>\]\] \[--unset\] +show/m);
    expect(group.stdout).toMatch(/^ {2}subscriber <id> \[list \| approve\|revoke <subscriberId>\] +list/m);
    const option = await runMain(['incoming', 'option', '--help'], { env: {} });
    expect(option.stdout).toMatch(/^ {2}portal\.maxConnections +an integer; below 0: unlimited \(default 10\)$/m);
    expect(option.stdout).toMatch(/^ {2}portal\.getPathPermRegex +a regular expression matching whole paths$/m);
    const unknown = await runMain(['incoming', 'grant', 'alice'], { env: {} });
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain('ecpds-edge incoming permission <id> [grant|revoke <operation>...]');
  });
});

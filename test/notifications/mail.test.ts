import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq, sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TransferMethod } from '../../core/dissemination/methods.ts';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { setDestinationStatus } from '../../core/dissemination/operator.ts';
import { type MailSender, type MailSenderOptions, startMailSender } from '../../core/notifications/sender.ts';
import { rowsOf } from '../../db/client.ts';
import { mailOutboxRepo } from '../../db/repositories/mail-outbox.ts';
import { dataTransfers, hosts, transferHistory } from '../../db/schema.ts';
import { parseMail } from '../../functions/node/config.ts';
import { type HostChecker, startHostChecker } from '../../functions/node/host-checks.ts';
import { smtpMailer } from '../../functions/node/mail.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { destinationBackup, type TestHost } from '../support/backups.ts';
import { eventually } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { type ReceivedMail, type SmtpReceiver, startSmtpReceiver } from '../support/servers/smtp.ts';

/**
 * The mails of destinations' and hosts' events (core/notifications), from the engine's statements through the
 * outbox to a real SMTP server.
 */
let h: Harness;
let admin: string;
let sources: string;
let smtp: SmtpReceiver;
const CREDENTIALS = { user: 'relay', password: 'relay-pw' };
const CONSOLE = 'https://data.example.org';
const PASSWORD = 'Host-Pa55word-9';
const movers: Mover[] = [];
const senders: MailSender[] = [];
const checkers: HostChecker[] = [];
/** Hosts (by login) whose sends fail, with the password in the message, as a server echoing a path would. */
const failing = new Set<string>();

const method: TransferMethod = {
  async send(host, file, source) {
    let sent = 0;
    for await (const chunk of source) sent += chunk.length;
    if (failing.has(host.login)) throw new Error(`cannot write /in/${host.password}/${file.target}: denied`);
    return { sent, md5: 'd41d8cd98f00b204e9800998ecf8427e' };
  },
  close: async () => {},
};

function mover() {
  const started = startMover(
    {
      ports: h.ports,
      methods: { test: method },
      sources: nodeSourceReader({ roots: [sources], hosts: [] }),
    },
    {
      name: `m${movers.length + 1}`,
      concurrency: 4,
      leaseMs: 3000,
      heartbeatMs: 200,
      pollMs: 40,
    },
  );
  movers.push(started);
  return started;
}

function sender(over: Partial<MailSenderOptions> = {}) {
  const started = startMailSender(
    {
      outbox: mailOutboxRepo(h.db),
      mailer: smtpMailer(parseMail(smtp.url, 'ECPDS <ecpds@example.org>')!),
      clock: h.ports.clock,
      logger: h.ports.logger,
      consoleOrigin: CONSOLE,
      newId: randomUUID,
    },
    {
      groups: 20,
      listed: 5,
      windowMs: 0,
      leaseMs: 10_000,
      pollMs: 50,
      firstRetryMs: 50,
      maxRetryMs: 300,
      ...over,
    },
  );
  senders.push(started);
  return started;
}

beforeAll(async () => {
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-mail-src-')));
  h = await createHarness({ sourceRoots: [sources] });
  admin = await h.client('operator', ['.*']);
  smtp = await startSmtpReceiver(CREDENTIALS);
});
afterEach(async () => {
  await Promise.all(movers.splice(0).map((m) => m.stop(2000)));
  await Promise.all(senders.splice(0).map((s) => s.stop()));
  await Promise.all(checkers.splice(0).map((c) => c.stop()));
  failing.clear();
});
afterAll(async () => {
  await smtp?.stop();
  await h?.close();
  fs.rmSync(sources, { recursive: true, force: true });
});

let files = 0;
async function put(destination: string) {
  const file = path.join(sources, `src-${++files}.bin`);
  fs.writeFileSync(file, `file ${files}\n`);
  const q = new URLSearchParams({
    destination,
    source: file,
    target: `out/f${files}.bin`,
  });
  const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
  return t!;
}

/** A host failing fast and retried soon, with a password, and the given mail options. */
const host = (login: string, options: Record<string, unknown> = {}) =>
  ({
    method: 'test',
    login,
    passwd: PASSWORD,
    retryCount: 1000,
    retryFrequency: 30,
    ...options,
  }) as TestHost;

let hostIds = 91_000;
async function destination(
  name: string,
  hosts: TestHost[],
  fields: Record<string, unknown>,
  options: { start?: boolean } = {},
) {
  const body = destinationBackup(name, hosts, {
    destination: { retryCount: -1, retryFrequency: 30, maxStart: 0, ...fields },
    nextHostId: () => ++hostIds,
  });
  const r = await h.call('PUT', '/v1/destination/backup', {
    auth: admin,
    body,
  });
  expect(r.status, r.text).toBe(200);
  if (options.start !== false) await setDestinationStatus(h.ports, 'test', name, 'start');
}

const mailsTo = (to: string) => smtp.received.filter((m) => m.to.includes(to));
const waitMails = (to: string, n: number, what: string) =>
  eventually(async () => (mailsTo(to).length >= n ? mailsTo(to) : undefined), 20_000, what);
const statusIs = (id: number, status: string) => async () =>
  (await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id)))[0]?.status === status ? true : undefined;
const failures = async (id: number) =>
  (await h.db.select().from(transferHistory).where(eq(transferHistory.transferId, id))).filter(
    (r) => r.status === 'STOP',
  ).length;

describe("a destination's mails", () => {
  it('tell of starts, ends, failures, changes and the host failing and working again, scrubbed', async () => {
    const ops = 'ops@example.org';
    const team = 'host-team@example.org';
    await destination('MAIL_ALL', [host('all', { mailOnError: true, mailOnSuccess: true, userMail: team })], {
      userMail: ops,
      mailOnStart: true,
      mailOnEnd: true,
      mailOnError: true,
      mailOnUpdate: true,
    });
    sender();
    const started = await waitMails(ops, 1, 'the update mail of the start');
    expect(started[0]!.subject).toMatch(/MAIL_ALL: destination changed/);
    expect(started[0]!.text).toContain('status set to WAIT');
    expect(started[0]!.text).toContain(`${CONSOLE}/console/monitor/destinations/MAIL_ALL`);

    failing.add('all');
    const t = await put('MAIL_ALL');
    mover();
    await eventually(async () => ((await failures(t.id)) >= 1 ? true : undefined), 15_000, 'a failure');
    const hostFailed = await waitMails(team, 1, 'the host failure mail');
    failing.delete('all');
    await eventually(statusIs(t.id, 'DONE'), 15_000, 'the transfer done');
    const recovered = await eventually(
      async () => mailsTo(team).find((m) => m.subject.includes('host works again')),
      20_000,
      'the host success mail',
    );
    const opsMails = await eventually(async () => {
      const subjects = mailsTo(ops).map((m) => m.subject);
      return ['transfer started', 'transfer failed', 'transfer done'].every((s) => subjects.some((x) => x.includes(s)))
        ? mailsTo(ops)
        : undefined;
    }, 20_000);

    const failed = opsMails.find((m) => m.subject.includes('transfer failed'))!;
    for (const mail of [failed, hostFailed[0]!]) {
      expect(mail.text).toContain('Destination: MAIL_ALL');
      expect(mail.text).toMatch(/Host: \d+/);
      expect(mail.text).toContain(t.target);
      expect(mail.text).toContain('denied');
      expect(mail.text).toContain('/in/***/');
      expect(mail.text).not.toContain(PASSWORD);
      expect(mail.text).toContain(`${CONSOLE}/console/monitor/destinations/MAIL_ALL`);
    }
    expect(hostFailed[0]!.subject).toMatch(/MAIL_ALL: host failed \(host \d+\)/);
    expect(recovered.text).toContain('works again after failing');
    expect(opsMails.find((m) => m.subject.includes('transfer done'))!.text).toContain(t.target);
    for (const m of smtp.received) expect(m.text + m.subject).not.toContain(PASSWORD);

    // An option set: said changed, without the options (they may hold secrets).
    await h.ports.repos.destinations.setData('MAIL_ALL', 'secretThing = "abc-123-xyz"');
    const changed = await eventually(async () => mailsTo(ops).find((m) => m.text.includes('options changed')));
    expect(changed.text).not.toContain('abc-123-xyz');
  });

  it('tell of a destination going on HOLD because every host failed', async () => {
    const ops = 'hold@example.org';
    await destination('MAIL_HOLD', [host('hold', { retryCount: 0 })], {
      userMail: ops,
      mailOnError: true,
      retryCount: 0,
    });
    failing.add('hold');
    await put('MAIL_HOLD');
    mover();
    sender();
    const held = await eventually(async () => mailsTo(ops).find((m) => m.subject.includes('on HOLD')), 20_000);
    expect(held.text).toContain('Destination: MAIL_HOLD');
    expect(held.text).toContain('every host failed');
    expect(held.text).toContain(`${CONSOLE}/console/monitor/destinations/MAIL_HOLD`);
  });

  it('send nothing and write no row for a destination without mail options', async () => {
    await destination('MAIL_NONE', [host('none', { userMail: 'nobody@example.org' })], {
      userMail: 'nobody@example.org',
    });
    const t = await put('MAIL_NONE');
    mover();
    await eventually(statusIs(t.id, 'DONE'), 15_000, 'the transfer done');
    const rows = rowsOf<{ n: number }>(
      await h.db.execute(sql`select count(*)::int as n from mail_outbox where destination = 'MAIL_NONE'`),
    );
    expect(Number(rows[0]!.n)).toBe(0);
  });
});

describe('a notifyOnce host', () => {
  it('is mailed once per failure episode, and when it works again', async () => {
    const to = 'once@example.org';
    await destination(
      'MAIL_ONCE',
      [
        host('once', {
          mailOnError: true,
          mailOnSuccess: true,
          notifyOnce: true,
          userMail: to,
        }),
      ],
      {},
    );
    mover();
    sender();
    failing.add('once');
    const first = await put('MAIL_ONCE');
    await eventually(async () => ((await failures(first.id)) >= 3 ? true : undefined), 15_000, 'three failures');
    await waitMails(to, 1, 'the first failure mail');
    failing.delete('once');
    await eventually(statusIs(first.id, 'DONE'), 15_000, 'the first done');
    await waitMails(to, 2, 'the success mail');

    failing.add('once');
    const second = await put('MAIL_ONCE');
    await eventually(async () => ((await failures(second.id)) >= 2 ? true : undefined), 15_000, 'two failures');
    await waitMails(to, 3, 'the second episode mail');
    // Time for any extra mail to come.
    await new Promise((r) => setTimeout(r, 500));
    const subjects = mailsTo(to).map((m) => m.subject.replace(/ \(host \d+\)/, ''));
    expect(subjects).toEqual([
      '[ECPDS] MAIL_ONCE: host failed',
      '[ECPDS] MAIL_ONCE: host works again',
      '[ECPDS] MAIL_ONCE: host failed',
    ]);
  });
});

describe("a host's checks", () => {
  /** The checked host of a destination of its own (not started: hosts are checked whatever it does). */
  async function checkedHost(name: string, mail: Record<string, unknown>) {
    const failingData = `test.fail = "yes"\ntest.error = "cannot write /in/${PASSWORD}/ecpds.tst: denied"`;
    const checked = host(name.toLowerCase(), {
      check: true,
      checkFrequency: 100,
      checkFilename: 'ecpds.tst',
      ...mail,
    });
    await destination(name, [{ ...checked, data: failingData } as TestHost], {}, { start: false });
    const [row] = await h.db.select({ id: hosts.hostid }).from(hosts).where(eq(hosts.login, name.toLowerCase()));
    return row!.id;
  }
  const checker = () => {
    const started = startHostChecker(h.ports, {
      concurrency: 2,
      pollMs: 30,
      timeoutMs: 5_000,
      fileRoots: [],
    });
    checkers.push(started);
    return started;
  };
  const failedChecks = async (hostId: number) => {
    const [c] = await h.ports.repos.hostChecks.ofDestination((await destinationOf(hostId))!);
    return c?.latest ? [c.latest, ...c.history].filter((r) => !r.ok).length : 0;
  };
  const destinationOf = async (hostId: number) =>
    rowsOf<{ destination: string }>(
      await h.db.execute(sql`select destination from destination_hosts where hostid = ${hostId}`),
    )[0]?.destination;
  const rowsOfKind = async (hostId: number, kind: string) =>
    Number(
      rowsOf<{ n: number }>(
        await h.db.execute(
          sql`select count(*)::int as n from mail_outbox where host_id = ${String(hostId)} and kind = ${kind}`,
        ),
      )[0]!.n,
    );

  it('mail a notifyOnce host once when its checks fail, and when one works again, scrubbed', async () => {
    const team = 'checks@example.org';
    const hostId = await checkedHost('MAIL_CHECK', {
      mailOnError: true,
      mailOnSuccess: true,
      notifyOnce: true,
      userMail: team,
    });
    sender();
    checker();
    await eventually(async () => ((await failedChecks(hostId)) >= 3 ? true : undefined), 20_000, 'three failed checks');
    const failed = await waitMails(team, 1, 'the host failure mail');
    expect(failed[0]!.subject).toBe(`[ECPDS] MAIL_CHECK: host failed (host ${hostId})`);
    expect(failed[0]!.text).toContain('Host check failed: cannot write /in/***/ecpds.tst: denied');
    expect(failed[0]!.text).toContain(`${CONSOLE}/console/monitor/destinations/MAIL_CHECK`);

    await h.db.update(hosts).set({ data: '' }).where(eq(hosts.hostid, hostId));
    const recovered = await eventually(
      async () => mailsTo(team).find((m) => m.subject.includes('host works again')),
      20_000,
      'the host success mail',
    );
    expect(recovered.text).toContain('works again after failing: Wrote ecpds.tst (18 bytes)');
    // One episode: one failure mail for every failed check, one success mail for the checks that work.
    await new Promise((r) => setTimeout(r, 300));
    expect(mailsTo(team).map((m) => m.subject.replace(` (host ${hostId})`, ''))).toEqual([
      '[ECPDS] MAIL_CHECK: host failed',
      '[ECPDS] MAIL_CHECK: host works again',
    ]);
    for (const m of smtp.received) expect(m.text + m.subject).not.toContain(PASSWORD);
  });

  it('write a failure row at every failed check of a host without notifyOnce, and none without a mail option', async () => {
    const every = await checkedHost('MAIL_CHECK_EVERY', {
      mailOnError: true,
      userMail: 'every@example.org',
    });
    const quiet = await checkedHost('MAIL_CHECK_QUIET', {
      userMail: 'quiet@example.org',
    });
    const running = checker();
    await eventually(
      async () => ((await failedChecks(every)) >= 3 && (await failedChecks(quiet)) >= 3 ? true : undefined),
      20_000,
      'three failed checks of each',
    );
    await running.stop();
    const [c] = await h.ports.repos.hostChecks.ofDestination('MAIL_CHECK_EVERY');
    const checks = 1 + c!.history.length;
    expect(await rowsOfKind(every, 'host-error')).toBe(checks);
    expect(await rowsOfKind(quiet, 'host-error')).toBe(0);
  });
});

describe('the mail outbox', () => {
  it('turns a burst of failing transfers into a digest', async () => {
    const to = 'engine-burst@example.org';
    await destination('MAIL_BURST_ENGINE', [host('burst')], {
      userMail: to,
      mailOnError: true,
    });
    failing.add('burst');
    const files = 150;
    for (let i = 0; i < files; i += 30) {
      await Promise.all(Array.from({ length: Math.min(30, files - i) }, () => put('MAIL_BURST_ENGINE')));
    }
    mover();
    const stops = async () =>
      rowsOf<{ n: number; files: number }>(
        await h.db.execute(sql`select count(*)::int as n, count(distinct transfer_id)::int as files
          from transfer_history where destination = 'MAIL_BURST_ENGINE' and status = 'STOP'`),
      )[0]!;
    await eventually(
      async () => (Number((await stops()).files) >= files ? true : undefined),
      60_000,
      'every file failed',
    );
    await Promise.all(movers.splice(0).map((m) => m.stop(2000)));
    const failures = Number((await stops()).n);
    expect(failures).toBeGreaterThanOrEqual(files);
    sender({ windowMs: 1_000, listed: 10 });
    await eventually(async () => {
      const rows = rowsOf<{ n: number }>(
        await h.db.execute(sql`select count(*)::int as n from mail_outbox where recipient = ${to} and done_at is null`),
      );
      return Number(rows[0]!.n) === 0 ? true : undefined;
    }, 20_000);
    const mails = mailsTo(to);
    expect(mails.length).toBeLessThanOrEqual(3);
    const counted = mails.map((m) => Number(/ x(\d+)$/.exec(m.subject)?.[1] ?? 1));
    expect(counted.reduce((a, b) => a + b, 0)).toBe(failures);
    expect(mails[0]!.text.split('\n').filter((l) => l.startsWith('- ')).length).toBe(10);
    expect(mails[0]!.text).toMatch(/\.\.\. and \d+ more/);
    expect(mails[0]!.text).not.toContain(PASSWORD);
  });

  it('makes one digest of 10,000 rows', async () => {
    const to = 'burst@example.org';
    await h.db.execute(sql`
      insert into mail_outbox (recipient, destination, host_id, kind, transfer_id, target, reason)
      select ${to}, 'MAIL_BURST', '42', 'error', i, 'out/burst-' || i || '.bin', 'connection refused'
      from generate_series(1, 10000) i`);
    sender({ windowMs: 200, listed: 10 });
    const mails = await waitMails(to, 1, 'the digest');
    await eventually(async () => {
      const rows = rowsOf<{ n: number }>(
        await h.db.execute(sql`select count(*)::int as n from mail_outbox where recipient = ${to} and done_at is null`),
      );
      return Number(rows[0]!.n) === 0 ? true : undefined;
    });
    expect(mailsTo(to).length).toBeLessThanOrEqual(3);
    expect(mails[0]!.subject).toContain('x10000');
    expect(mails[0]!.text).toContain('out/burst-1.bin');
    expect(mails[0]!.text).toContain('... and 9990 more');
    expect(mails[0]!.text.split('\n').filter((l) => l.startsWith('- ')).length).toBe(10);
  });

  it('loses nothing and keeps the order while the SMTP server is down', async () => {
    const to = 'down@example.org';
    for (const name of ['MAIL_DOWN_A', 'MAIL_DOWN_B', 'MAIL_DOWN_C']) {
      await destination(name, [host(name.toLowerCase())], { userMail: to, mailOnUpdate: true }, { start: false });
    }
    const port = smtp.port;
    await smtp.stop();
    sender();
    for (const name of ['MAIL_DOWN_A', 'MAIL_DOWN_B', 'MAIL_DOWN_C', 'MAIL_DOWN_A']) {
      await h.ports.repos.destinations.setData(name, `changed = "${name}"`);
    }
    // Tries meanwhile, and fails: the rows stay, and /metrics counts them.
    await new Promise((r) => setTimeout(r, 600));
    const metrics = await h.call('GET', '/metrics', { auth: admin });
    expect(metrics.text).toMatch(/ecpds_mail_outbox_pending [1-9]/);
    expect(metrics.text).toMatch(/ecpds_mail_outbox_oldest_seconds \d+/);
    const tried = rowsOf<{ attempts: number }>(
      await h.db.execute(sql`select max(attempts)::int as attempts from mail_outbox where recipient = ${to}`),
    );
    expect(Number(tried[0]!.attempts)).toBeGreaterThan(0);

    smtp = await startSmtpReceiver(CREDENTIALS, port);
    const mails: ReceivedMail[] = await waitMails(to, 3, 'the mails after the server came back');
    await new Promise((r) => setTimeout(r, 300));
    expect(mailsTo(to).map((m) => m.subject)).toEqual([
      '[ECPDS] MAIL_DOWN_A: destination changed x2',
      '[ECPDS] MAIL_DOWN_B: destination changed',
      '[ECPDS] MAIL_DOWN_C: destination changed',
    ]);
    expect(mails[0]!.text.match(/options changed/g)?.length).toBe(2);
    const left = rowsOf<{ n: number }>(
      await h.db.execute(sql`select count(*)::int as n from mail_outbox where done_at is null`),
    );
    expect(Number(left[0]!.n)).toBe(0);
  });
});

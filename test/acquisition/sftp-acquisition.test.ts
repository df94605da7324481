import fs from 'node:fs';
import path from 'node:path';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changeTransfer } from '../../core/dissemination/manual.ts';
import { rowsOf } from '../../db/client.ts';
import { dataFiles, destinations, hosts } from '../../db/schema.ts';
import { md5 } from '../retrieval/support.ts';
import { restoreDestination } from '../support/engine.ts';
import { type SlowProxy, startSlowProxy } from '../support/servers/slow-proxy.ts';
import { type Sshd, sshdMissing, startSshd } from '../support/servers/sshd.ts';
import { type AcquisitionScene, acquisitionScene, closedPort, minutesAgo, writeFile } from './support.ts';

/**
 * Acquisition end to end against OpenSSH: an Acquisition host listed on its schedule, its new files
 * registered once, retrieved from it into the store and sent on through the destination's alias.
 */
const noSshd = sshdMissing();
let s: AcquisitionScene;
let sshd: Sshd;
let proxy: SlowProxy;

beforeAll(async () => {
  if (noSshd) return;
  s = await acquisitionScene('acq');
  sshd = await startSshd();
  proxy = await startSlowProxy(sshd.port);
  proxy.stallAfterBytes = 0;
});
afterAll(async () => {
  await s?.close();
  await proxy?.stop();
  await sshd?.stop();
});

/** An Acquisition destination listing `lines` on the sshd, with its host's options; answers the host's id. */
const acquisitionHost = (name: string, lines: string, data = '', port = sshd.port) =>
  s.acquisitionHost(name, {
    method: 'sftp',
    host: `127.0.0.1:${port}`,
    login: sshd.user,
    passwd: sshd.password,
    dir: lines,
    data,
  });

const lastRun = (hostId: number) => s.lastRun(hostId);
const finishedAt = (hostId: number) => s.finishedAt(hostId);
const nextRun = (hostId: number, after?: number | null) => s.nextRun(hostId, after);
const firstRun = (hostId: number) => s.firstRun(hostId);
const transfersOf = (destination: string) => s.transfersOf(destination);
const storedMd5 = (fileId: number) => s.storedMd5(fileId);
const write = writeFile;

describe.skipIf(noSshd !== null)(`acquisition over sftp ${noSshd ?? ''}`, () => {
  it('new files are registered once, retrieved from the host and sent on through the alias', async () => {
    const remote = sshd.scratch('acq-new-');
    write(remote, 'a.bin', Buffer.alloc(70_000, 1), minutesAgo(5));
    write(remote, 'b.bin', Buffer.alloc(30_000, 2), minutesAgo(5));
    write(remote, 'notes.txt', 'not taken', minutesAgo(5));
    fs.mkdirSync(path.join(remote, 'sub.bin'));
    const outDir = await s.sftpDestination(sshd, 'ACQ_OUT', true);
    const hostId = await acquisitionHost('ACQ_NEW', `${remote}/{.*\\.bin}`);
    await s.h.db.execute(sql`insert into destination_aliases (alias_from, alias_to) values ('ACQ_NEW', 'ACQ_OUT')`);
    await s.firstRunSelects(hostId, 'ACQ_NEW', 'sub.bin');

    const acquired = await transfersOf('ACQ_NEW');
    expect(acquired.map((t) => t.target).sort()).toEqual(['a.bin', 'b.bin']);
    // The reference's default unique name: the path on the host.
    expect(acquired.find((t) => t.target === 'a.bin')!.uniqueName).toBe(`${remote}/a.bin`);
    const aFile = acquired.find((t) => t.target === 'a.bin')!.fileId;
    await s.eventually(async () => ((await storedMd5(aFile)) ? true : undefined), 15_000, 'retrieved');
    expect(await storedMd5(aFile)).toBe(md5(Buffer.alloc(70_000, 1)));
    const [row] = await s.h.db.select().from(dataFiles).where(eq(dataFiles.id, aFile));
    expect(row).toMatchObject({ acquiredFrom: hostId, size: 70_000, registeredBy: `acquisition:${hostId}` });

    // The alias sends the acquired bytes to its host.
    await s.eventually(
      async () =>
        fs.existsSync(path.join(outDir, 'b.bin')) && fs.existsSync(path.join(outDir, 'a.bin')) ? 1 : undefined,
      30_000,
      'sent through the alias',
    );
    expect(md5(fs.readFileSync(path.join(outDir, 'a.bin')))).toBe(md5(Buffer.alloc(70_000, 1)));

    // The acquiring destination sends nowhere: its own transfers end once retrieved, and it stays started.
    await s.eventually(
      async () => ((await transfersOf('ACQ_NEW')).every((t) => t.status === 'DONE') ? 1 : undefined),
      15_000,
      'acquired transfers DONE',
    );
    const [state] = await s.h.db.select().from(destinations).where(eq(destinations.name, 'ACQ_NEW'));
    expect(state!.statusCode).not.toBe('FAIL');

    // Listed again: nothing new, each entry told why.
    const again = await nextRun(hostId);
    expect(again.output).toMatch(/a\.bin \(ACQ_NEW\/a\.bin\): not selected: exists \(DataFileId=\d+\)/);
    expect((await transfersOf('ACQ_NEW')).length).toBe(2);
  });

  it('a file younger than fileage waits for a later run', async () => {
    const remote = sshd.scratch('acq-age-');
    write(remote, 'young.bin', 'y');
    const hostId = await acquisitionHost('ACQ_AGE', remote, 'acquisition.fileage = ">=2m"');
    const run = await firstRun(hostId);
    expect(run.output).toMatch(/young\.bin: not selected: wrong age: \d+ s \(fileage >=2m\)/);
    expect(await transfersOf('ACQ_AGE')).toEqual([]);
    fs.utimesSync(path.join(remote, 'young.bin'), minutesAgo(3), minutesAgo(3));
    await s.eventually(async () => ((await transfersOf('ACQ_AGE')).length === 1 ? 1 : undefined), 15_000, 'acquired');
  });

  it("an operator's stop keeps a file acquired; a deletion lets it be acquired again", async () => {
    const remote = sshd.scratch('acq-stop-');
    write(remote, 'kept.bin', 'k', minutesAgo(5));
    write(remote, 'gone.bin', 'g', minutesAgo(5));
    // On standby, for a destination that sends: held once retrieved, where an operator may stop them.
    const acquiring = {
      type: 'Acquisition',
      nickname: 'acq-stop-acq',
      acquisitionFrequency: 300,
      method: 'sftp' as const,
      host: `127.0.0.1:${sshd.port}`,
      login: sshd.user,
      passwd: sshd.password,
      dir: remote,
      data: 'acquisition.standby = "yes"',
    };
    await restoreDestination(s.h, s.admin, 'ACQ_STOP', [acquiring, { method: 'test' }], { destination: { type: 0 } });
    const [row] = await s.h.db.select({ id: hosts.hostid }).from(hosts).where(eq(hosts.nickname, 'acq-stop-acq'));
    const hostId = row!.id;
    await firstRun(hostId);
    const held = await s.eventually(
      async () => {
        const all = await transfersOf('ACQ_STOP');
        return all.length === 2 && all.every((t) => t.status === 'HOLD') ? all : undefined;
      },
      20_000,
      'both held',
    );
    const kept = held.find((t) => t.target === 'kept.bin');
    const gone = held.find((t) => t.target === 'gone.bin');
    await changeTransfer(s.h.ports, 'operator', kept!.id, 'stop');
    const r = await s.h.call('DELETE', `/v1/datafile/del?id=${gone!.fileId}`, { auth: s.admin });
    expect(r.status, r.text).toBe(200);
    const again = await nextRun(hostId);
    expect(again.output).toContain(`kept.bin (ACQ_STOP/kept.bin): not selected: exists (DataFileId=${kept!.fileId})`);
    expect(again.output).toMatch(/gone\.bin \(ACQ_STOP\/gone\.bin\): selected: scheduled with DataFileId=\d+/);
    const after = await transfersOf('ACQ_STOP');
    expect(after.filter((t) => t.target === 'kept.bin').map((t) => t.status)).toEqual(['STOP']);
    expect(after.filter((t) => t.target === 'gone.bin').length).toBe(2);
  });

  it('a file changed at the host is acquired again only under requeueon', async () => {
    const plain = sshd.scratch('acq-plain-');
    const ruled = sshd.scratch('acq-rule-');
    for (const dir of [plain, ruled]) write(dir, 'c.bin', 'first', minutesAgo(10));
    const plainHost = await acquisitionHost('ACQ_PLAIN', plain);
    const ruledHost = await acquisitionHost('ACQ_RULED', ruled, 'acquisition.requeueon = "$time2 > $time1"');
    await firstRun(plainHost);
    await firstRun(ruledHost);
    const [before] = await transfersOf('ACQ_RULED');
    const [plainTransfer] = await transfersOf('ACQ_PLAIN');
    // Both stored before the files change at the host: a retrieval after it would find another size and fail.
    for (const t of [before!, plainTransfer!]) {
      await s.eventually(async () => ((await storedMd5(t.fileId)) ? 1 : undefined), 15_000, 'retrieved');
    }

    const plainSince = await finishedAt(plainHost);
    for (const dir of [plain, ruled]) write(dir, 'c.bin', 'second, longer', minutesAgo(1));
    const ruledRun = await s.eventually(
      async () => {
        const run = await lastRun(ruledHost);
        return run?.output.includes('re-queued') ? run : undefined;
      },
      15_000,
      're-queued',
    );
    expect(ruledRun.output).toMatch(/c\.bin \(ACQ_RULED\/c\.bin\): selected: re-queued with DataFileId=\d+/);
    // A run that had listed before the change may end after it: the one after it has seen it.
    const plainRun = await nextRun(plainHost, (await nextRun(plainHost, plainSince)).finishedAt!.getTime());
    expect(plainRun.output).toMatch(/c\.bin \(ACQ_PLAIN\/c\.bin\): not selected: exists/);
    // Once acquired again, the changed file is not acquired a third time.
    expect((await nextRun(ruledHost)).output).toMatch(/c\.bin \(ACQ_RULED\/c\.bin\): not selected: exists/);
    // The same transfer and file, with the new bytes retrieved.
    const after = await transfersOf('ACQ_RULED');
    expect(after.map((t) => t.id)).toEqual([before!.id]);
    await s.eventually(
      async () => ((await storedMd5(before!.fileId)) === md5(Buffer.from('second, longer')) ? 1 : undefined),
      15_000,
      'the new bytes retrieved',
    );
    expect(await storedMd5(plainTransfer!.fileId)).toBe(md5(Buffer.from('first')));
  });

  it('a run that stalls is cut at maximumDuration, and the host is listed again', async () => {
    const remote = sshd.scratch('acq-cut-');
    write(remote, 'd.bin', 'd', minutesAgo(5));
    const hostId = await acquisitionHost('ACQ_CUT', remote, 'acquisition.maximumDuration = "1s"', proxy.port);
    const run = await firstRun(hostId);
    expect(run.outcome).toBe('cut');
    expect(run.output).toContain('Run cut: maximumDuration (1000 ms) reached');
    expect(run.finishedAt!.getTime() - run.startedAt!.getTime()).toBeLessThan(15_000);
    await nextRun(hostId);
    expect(await transfersOf('ACQ_CUT')).toEqual([]);
  });

  it('a host down fails the run, nothing is registered, and its files come once it is back', async () => {
    const remote = sshd.scratch('acq-down-');
    write(remote, 'e.bin', 'e', minutesAgo(5));
    const closed = await closedPort();
    const hostId = await acquisitionHost('ACQ_DOWN', remote, '', closed);
    const run = await firstRun(hostId);
    expect(run.outcome).toBe('failed');
    expect(run.output).toMatch(/Run failed: .*ECONNREFUSED|Run failed: .*connect/i);
    expect(run.output).not.toContain(sshd.password);
    expect(await transfersOf('ACQ_DOWN')).toEqual([]);
    expect(await s.metric(`ecpds_acquisition_runs_total{host="${hostId}",outcome="failed"}`)).toBeGreaterThanOrEqual(1);
    expect(await s.metric(`ecpds_acquisition_runs_total{host="${hostId}",outcome="done"}`)).toBe(0);
    await s.h.db
      .update(hosts)
      .set({ host: `127.0.0.1:${sshd.port}` })
      .where(eq(hosts.hostid, hostId));
    await s.eventually(async () => ((await transfersOf('ACQ_DOWN')).length === 1 ? 1 : undefined), 15_000, 'acquired');
    await s.eventually(
      async () =>
        (await s.metric(`ecpds_acquisition_entries_total{host="${hostId}",outcome="selected"}`)) === 1 || undefined,
      15_000,
      'the selected entry counted',
    );
  });

  it('two movers claiming at once: a host goes to one; none past the bound over all movers', async () => {
    await s.stopAcquirer();
    const hostId = await acquisitionHost('ACQ_CLAIM', sshd.scratch('acq-claim-'));
    const repo = s.h.ports.repos.acquisition;
    const claims = await Promise.all([repo.claim('m1', 60_000, 100, 100), repo.claim('m2', 60_000, 100, 100)]);
    const holders = claims.map((c) => c.find((claim) => claim.host.hostId === String(hostId)));
    expect(holders.filter(Boolean).length).toBe(1);
    expect(holders.find(Boolean)!.destinations).toEqual([{ name: 'ACQ_CLAIM', sendsNowhere: true, data: '' }]);
    const other = holders[0] ? 'm2' : 'm1';
    expect(await repo.finish(other, hostId, { outcome: 'done', output: 'not its run', counts: {} }, 0)).toBe(false);
    expect((await lastRun(hostId))!.runningOn).toBe(holders[0] ? 'm1' : 'm2');

    const [{ n: running }] = rowsOf<{ n: number }>(
      await s.h.db.execute(sql`select count(*)::int as n from acquisition_runs where lease_until >= now()`),
    ) as [{ n: number }];
    const dueId = await acquisitionHost('ACQ_CLAIM_DUE', sshd.scratch('acq-claim-'));
    expect(await repo.claim('m3', 60_000, 100, running)).toEqual([]);
    expect((await repo.claim('m4', 60_000, 100, running + 1)).map((c) => Number(c.host.hostId))).toEqual([dueId]);
  });
});

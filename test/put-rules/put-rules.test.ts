import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setDestinationStatus } from '../../core/dissemination/operator.ts';
import { dataTransfers, destinations, transferHistory } from '../../db/schema.ts';
import { destinationBackup } from '../support/backups.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/** The rules of datafile/put: a destination's scheduler options, its limits, its aliases and duplicates. */
const NOW = new Date('2030-01-01T12:00:00.000Z');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
let h: Harness;
let admin: string;
let root: string;
let hostid = 91_000;

beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-put-rules-')));
  fs.writeFileSync(path.join(root, 'big.grib'), Buffer.alloc(1234, 1));
  fs.writeFileSync(path.join(root, 'small.grib'), Buffer.alloc(10, 2));
  fs.writeFileSync(path.join(root, 'notes.txt'), 'notes');
  h = await createHarness({ sourceRoots: [root] });
  h.ports.clock = () => NOW;
  admin = await h.client('admin', ['.*']);
});
afterAll(async () => {
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

/** Restores destinations through the API, with their options text and fields, and the aliases between them. */
async function restore(
  list: Array<{ name: string; data?: string; fields?: Record<string, unknown> }>,
  aliases: Array<[string, string]> = [],
) {
  const entries = list.map(
    ({ name, data, fields }) =>
      destinationBackup(name, [], { destination: { data: data ?? '', ...fields }, nextHostId: () => ++hostid }).backup
        .destinations[0],
  );
  const body = {
    backup: { destinations: entries, aliases: aliases.map(([aliasFrom, aliasTo]) => ({ aliasFrom, aliasTo })) },
  };
  return h.call('PUT', '/v1/destination/backup', { auth: admin, body });
}

async function restored(...args: Parameters<typeof restore>) {
  const r = await restore(...args);
  expect(r.text).toBe(`{"status":"ok","message":"Number of Destination(s) created: ${args[0].length}"}`);
}

const put = (q: Record<string, string>) =>
  h.call('GET', `/v1/datafile/put?${new URLSearchParams({ source: path.join(root, 'big.grib'), ...q })}`, {
    auth: admin,
  });
async function idOf(q: Record<string, string>) {
  const r = await put(q);
  expect(r.text).toMatch(/^\{"status":"ok","id":\d+\}$/);
  return r.json.id as number;
}
const transfersOf = (id: number) =>
  h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, id)).orderBy(asc(dataTransfers.id));
const historyOf = (transferId: number) =>
  h.db
    .select({ status: transferHistory.status, comment: transferHistory.comment })
    .from(transferHistory)
    .where(eq(transferHistory.transferId, transferId))
    .orderBy(asc(transferHistory.id));
const error = (message: string) => JSON.stringify({ status: 'error', message });

describe('scheduler options at datafile/put', () => {
  it('scheduler.standby = yes holds every put; never queues even a standby put', async () => {
    await restored([
      { name: 'PR_STANDBY', data: 'scheduler.standby = "yes"' },
      { name: 'PR_NEVER', data: 'scheduler.standby = "never"' },
    ]);
    const [held] = await transfersOf(await idOf({ destination: 'PR_STANDBY' }));
    expect(held!.status).toBe('HOLD');
    const [queued] = await transfersOf(await idOf({ destination: 'PR_NEVER', standby: 'true' }));
    expect(queued!.status).toBe('WAIT');
    expect((await historyOf(held!.id)).map((x) => x.status)).toEqual(['HOLD']);
  });

  it('scheduler.lifetime replaces the put lifetime; scheduler.delay moves schedule, queue and expiry', async () => {
    await restored([
      { name: 'PR_LIFETIME', data: 'scheduler.lifetime = "3d"' },
      { name: 'PR_DELAY', data: 'scheduler.delay = "15m"' },
    ]);
    const [long] = await transfersOf(await idOf({ destination: 'PR_LIFETIME', lifetime: '1h' }));
    expect(long!.scheduledAt.getTime()).toBe(NOW.getTime());
    expect(long!.expiresAt.getTime()).toBe(NOW.getTime() + 3 * DAY);
    const [late] = await transfersOf(await idOf({ destination: 'PR_DELAY', at: '+1h', lifetime: '2h' }));
    expect(late!.scheduledAt.getTime()).toBe(NOW.getTime() + HOUR + 15 * MINUTE);
    expect(late!.queueAt.getTime()).toBe(late!.scheduledAt.getTime());
    expect(late!.expiresAt.getTime()).toBe(NOW.getTime() + 3 * HOUR + 15 * MINUTE);
  });

  it('scheduler.asap queues at the put time whatever the schedule', async () => {
    await restored([{ name: 'PR_ASAP', data: 'scheduler.asap = "yes"' }]);
    const [t] = await transfersOf(await idOf({ destination: 'PR_ASAP', at: '+2h' }));
    expect(t!.scheduledAt.getTime()).toBe(NOW.getTime() + 2 * HOUR);
    expect(t!.queueAt.getTime()).toBe(NOW.getTime());
  });

  it('scheduler.force rules override per target', async () => {
    const force = '(== {.*\\\\.grib}) standby=always;delay=1h\\n(=. .txt) asap=yes';
    await restored([{ name: 'PR_FORCE', data: `scheduler.force = "${force}"` }]);
    const [grib] = await transfersOf(await idOf({ destination: 'PR_FORCE' }));
    expect(grib!.status).toBe('HOLD');
    expect(grib!.scheduledAt.getTime()).toBe(NOW.getTime() + HOUR);
    const [txt] = await transfersOf(
      await idOf({ destination: 'PR_FORCE', source: path.join(root, 'notes.txt'), at: '+3h' }),
    );
    expect(txt!.status).toBe('WAIT');
    expect(txt!.queueAt.getTime()).toBe(NOW.getTime());
  });

  it('refuses a bad value when the options are written, and shows the options in the backup', async () => {
    const cases: Array<[string, string]> = [
      ['scheduler.delay = "soon"', "Invalid value for option scheduler.delay: 'soon'"],
      [
        'scheduler.standby = "maybe"',
        "Invalid value for option scheduler.standby: 'maybe' (yes, no or never expected)",
      ],
      [
        'scheduler.activeTimeRange = "25:00-26:00"',
        "Invalid value for option scheduler.activeTimeRange: '25:00-26:00'",
      ],
      ['scheduler.requeueon = "$size2 >"', "Invalid value for option scheduler.requeueon: '$size2 >'"],
      ['scheduler.asap = "soon"', "Invalid value for option scheduler.asap: 'soon' (yes, no, true or false expected)"],
      ['alias.pattern = "pattern=(.*"', "Invalid value for option alias.pattern pattern: '(.*'"],
    ];
    for (const [data, message] of cases) {
      const r = await restore([{ name: 'PR_BAD', data }]);
      expect(r.status).toBe(500);
      expect(r.json.status).toBe('error');
      expect(r.json.message).toContain(message);
    }
    expect((await h.call('GET', '/v1/destination/backup/PR_BAD', { auth: admin })).json.status).toBe('error');
    const data = 'scheduler.activeTimeRange = "06:00-18:00,20:00-22:00"\nscheduler.delay = "15m"';
    await restored([{ name: 'PR_SHOWN', data }]);
    const shown = await h.call('GET', '/v1/destination/backup/PR_SHOWN', { auth: admin });
    expect(shown.json.backup.destinations[0].destination.data).toBe(data);
  });
});

describe('limits at datafile/put', () => {
  it('maxPending: refused once more transfers wait than the limit, with the reference message', async () => {
    await restored([{ name: 'PR_PENDING', fields: { maxPending: 2 } }]);
    for (const u of ['a', 'b', 'c']) await idOf({ destination: 'PR_PENDING', uniquename: u });
    const r = await put({ destination: 'PR_PENDING', uniquename: 'd' });
    expect(r.text).toBe(error('Destination PR_PENDING have 3 pending DataTransfer(s) (limit is 2)'));
    const waiting = await h.db.select().from(dataTransfers).where(eq(dataTransfers.destination, 'PR_PENDING'));
    expect(waiting).toHaveLength(3);
    // Counted only up to one past the limit to decide, the refusal still says how many wait.
    await h.db.update(destinations).set({ maxPending: 1 }).where(eq(destinations.name, 'PR_PENDING'));
    const lower = await put({ destination: 'PR_PENDING', uniquename: 'e' });
    expect(lower.text).toBe(error('Destination PR_PENDING have 3 pending DataTransfer(s) (limit is 1)'));
    // 0: no limit.
    await h.db.update(destinations).set({ maxPending: 0 }).where(eq(destinations.name, 'PR_PENDING'));
    expect((await put({ destination: 'PR_PENDING', uniquename: 'f' })).status).toBe(200);
  });

  it('maxFileSize: a larger file is refused and nothing is stored', async () => {
    await restored([{ name: 'PR_SIZE', fields: { maxFileSize: 100 } }]);
    const r = await put({ destination: 'PR_SIZE' });
    expect(r.text).toBe(error('File exceeds maximum allowed size: 1234 bytes (limit is 100 bytes)'));
    expect(await h.db.select().from(dataTransfers).where(eq(dataTransfers.destination, 'PR_SIZE'))).toEqual([]);
    await idOf({ destination: 'PR_SIZE', source: path.join(root, 'small.grib') });
  });
});

describe('aliases at datafile/put', () => {
  it('queues a transfer to each alias under its rules, in one data file, with history', async () => {
    await restored([{ name: 'PR_B' }, { name: 'PR_C' }, { name: 'PR_D' }]);
    const data = [
      'alias.PR_B = "pattern=.*\\\\.grib,priority=10,target=mirror/$name,delay=PT30M"',
      'alias.PR_C = "(=. .txt) lifetime=1h"',
    ].join('\n');
    await restored(
      [{ name: 'PR_A', data }],
      [
        ['PR_A', 'PR_B'],
        ['PR_A', 'PR_C'],
      ],
    );
    const grib = await transfersOf(await idOf({ destination: 'PR_A', priority: '50' }));
    expect(grib.map((t) => [t.destination, t.target, t.priority])).toEqual([
      ['PR_A', 'big.grib', 50],
      ['PR_B', 'mirror/big.grib', 10],
      // No line of PR_C's rule holds for the target: aliased all the same, with the put's values.
      ['PR_C', 'big.grib', 50],
    ]);
    expect(grib[1]!.scheduledAt.getTime()).toBe(NOW.getTime() + 30 * MINUTE);
    expect(grib[1]!.expiresAt.getTime()).toBe(NOW.getTime() + 2 * DAY + 30 * MINUTE);
    expect((await historyOf(grib[1]!.id))[0]!.comment).toBe('Registered by admin aliased from Destination=PR_A');
    const txt = await transfersOf(await idOf({ destination: 'PR_A', source: path.join(root, 'notes.txt') }));
    expect(txt.map((t) => t.destination)).toEqual(['PR_A', 'PR_C']);
    expect(txt[1]!.expiresAt.getTime()).toBe(NOW.getTime() + HOUR);
  });

  it('walks aliases of aliases with recursive=yes, and a cycle ends', async () => {
    await restored([{ name: 'PR_R3' }]);
    await restored([{ name: 'PR_R2', data: 'alias.PR_R3 = "recursive=yes"' }], [['PR_R2', 'PR_R3']]);
    await restored([{ name: 'PR_R1', data: 'alias.PR_R2 = "recursive=yes"' }], [['PR_R1', 'PR_R2']]);
    await restored([{ name: 'PR_R0', data: 'alias.PR_R1 = "recursive=yes"' }], [['PR_R0', 'PR_R1']]);
    const all = await transfersOf(await idOf({ destination: 'PR_R0' }));
    expect(all.map((t) => t.destination)).toEqual(['PR_R0', 'PR_R1', 'PR_R2', 'PR_R3']);
    expect((await historyOf(all[3]!.id))[0]!.comment).toBe(
      'Registered by admin aliased from Destination=PR_R0 via Destination=PR_R1, Destination=PR_R2',
    );
    // Without recursive=yes the walk stops at the first alias.
    await restored([{ name: 'PR_S0' }], [['PR_S0', 'PR_R2']]);
    const stopped = await transfersOf(await idOf({ destination: 'PR_S0', target: 'other' }));
    expect(stopped.map((t) => t.destination)).toEqual(['PR_S0', 'PR_R2']);
  });

  it('a cycle of aliases gives one transfer per destination', async () => {
    await restored(
      [
        { name: 'PR_CY1', data: 'alias.PR_CY2 = "recursive=yes"' },
        { name: 'PR_CY2', data: 'alias.PR_CY1 = "recursive=yes"' },
      ],
      [
        ['PR_CY1', 'PR_CY2'],
        ['PR_CY2', 'PR_CY1'],
      ],
    );
    const all = await transfersOf(await idOf({ destination: 'PR_CY1' }));
    expect(all.map((t) => t.destination)).toEqual(['PR_CY1', 'PR_CY2']);
  });

  it('a duplicate anywhere in the closure refuses the put; force requeues every transfer of the file', async () => {
    await restored([{ name: 'PR_DUP_TO' }]);
    await restored([{ name: 'PR_DUP' }], [['PR_DUP', 'PR_DUP_TO']]);
    const id = await idOf({ destination: 'PR_DUP', target: 'dup.grib' });
    const before = await transfersOf(id);
    expect(before).toHaveLength(2);
    expect((await put({ destination: 'PR_DUP', target: 'dup.grib' })).text).toBe(
      error(`DataFile already exists (DataFileId=${id})`),
    );
    const forced = await put({ destination: 'PR_DUP', target: 'dup.grib', force: 'true', at: '+1h' });
    expect(forced.text).toBe(`{"status":"ok","id":${id}}`);
    const after = await transfersOf(id);
    expect(after.map((t) => t.id)).toEqual(before.map((t) => t.id));
    for (const t of after) expect(t.scheduledAt.getTime()).toBe(NOW.getTime() + HOUR);
    expect((await historyOf(after[1]!.id)).map((x) => x.comment)).toEqual([
      'Registered by admin aliased from Destination=PR_DUP',
      'Requeued by a forced put aliased from Destination=PR_DUP',
    ]);
  });
});

describe('scheduler.force = yes', () => {
  it('scheduler.force = yes takes a duplicate put as a forced one', async () => {
    await restored([{ name: 'PR_FORCED', data: 'scheduler.force = "yes"' }]);
    const id = await idOf({ destination: 'PR_FORCED' });
    expect((await put({ destination: 'PR_FORCED', at: '+1h' })).text).toBe(`{"status":"ok","id":${id}}`);
    const [t] = await transfersOf(id);
    expect(t!.scheduledAt.getTime()).toBe(NOW.getTime() + HOUR);
    expect((await historyOf(t!.id)).map((x) => x.comment)).toEqual(['Registered by admin', 'Requeued by a forced put']);
  });
});

describe('scheduler.requeueon at datafile/put', () => {
  it('the transfer the rule prefers wins; the other waiting one goes to HOLD with the reference comment', async () => {
    const data = 'scheduler.requeueon = "$size2 > $size1"\nscheduler.requeueignore = ".*\\\\.txt"';
    await restored([{ name: 'PR_REQ', data }]);
    const small = (
      await transfersOf(
        await idOf({ destination: 'PR_REQ', source: path.join(root, 'small.grib'), target: 'f.grib', uniquename: '1' }),
      )
    )[0]!;
    const big = (await transfersOf(await idOf({ destination: 'PR_REQ', target: 'f.grib', uniquename: '2' })))[0]!;
    const [heldSmall] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, small.id));
    expect(heldSmall!.status).toBe('HOLD');
    const comment =
      `Duplicate file found dated 2030-01-01 12:00:00.000 sized 1234 bytes (DataTransferId=${big.id}) ` +
      "with rule '$size2 > $size1' false";
    expect(heldSmall!.message).toBe(comment);
    expect(await historyOf(small.id)).toEqual([
      { status: 'WAIT', comment: 'Registered by admin' },
      { status: 'HOLD', comment },
    ]);
    // A smaller file put later loses at once.
    const later = (
      await transfersOf(
        await idOf({ destination: 'PR_REQ', source: path.join(root, 'small.grib'), target: 'f.grib', uniquename: '3' }),
      )
    )[0]!;
    const [laterNow] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, later.id));
    expect(laterNow!.status).toBe('HOLD');
    const [bigNow] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, big.id));
    expect(bigNow!.status).toBe('WAIT');
    // An ignored target is never compared.
    for (const u of ['1', '2'])
      await idOf({ destination: 'PR_REQ', source: path.join(root, 'notes.txt'), uniquename: u });
    const txt = await h.db.select().from(dataTransfers).where(eq(dataTransfers.target, 'notes.txt'));
    expect(txt.filter((t) => t.destination === 'PR_REQ').map((t) => t.status)).toEqual(['WAIT', 'WAIT']);
  });
});

describe('scheduler.activeTimeRange in the due look', () => {
  it('a destination is due only inside its daily range (UTC)', async () => {
    await restored([{ name: 'PR_RANGE', data: 'scheduler.activeTimeRange = "06:00-10:00,20:00-22:00"' }]);
    await setDestinationStatus(h.ports, 'test', 'PR_RANGE', 'start');
    await idOf({ destination: 'PR_RANGE' });
    const due = async (at: string) =>
      (await h.ports.repos.dissemination.dueDestinations(new Date(at), 50, { destination: 'PR_RANGE' })).map(
        (d) => d.name,
      );
    expect(await due('2030-01-01T12:00:01Z')).toEqual([]);
    expect(await due('2030-01-02T06:00:00Z')).toEqual([]);
    expect(await due('2030-01-02T06:00:01Z')).toEqual(['PR_RANGE']);
    expect(await due('2030-01-02T21:30:00Z')).toEqual(['PR_RANGE']);
    expect(await due('2030-01-02T22:00:00Z')).toEqual([]);
  });
});

import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errEvent, formatEvent, prsEvent } from '../core/common/events.ts';
import { sweepExpired } from '../core/data-files/handlers.ts';
import { openPglite } from '../db/pglite.ts';
import { dataFiles, dataTransfers, destinations } from '../db/schema.ts';
import { onPostgres } from './support/database.ts';
import { createHarness, type Harness } from './support/harness.ts';

const T0 = new Date('2030-01-01T00:00:00.000Z');
const plus = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
const EXPIRED = 'File not transferred before expiration';
/** Each command starts tsx and opens the embedded database: slow on a busy machine. */
const SLOW = 240_000;
let h: Harness;
let admin: string;
let root: string;

beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-sweep-')));
  fs.writeFileSync(path.join(root, 'a.txt'), 'hello');
  h = await createHarness({ sourceRoots: [root] });
  h.ports.clock = () => T0;
  admin = await h.client('admin', ['.*']);
  const restored = await h.call('PUT', '/v1/destination/backup', {
    auth: admin,
    body: {
      backup: {
        destinations: [
          {
            destination: { name: 'SWEEPD', countryIso: 'gb', type: 2 },
            associations: [
              { priority: 1, host: { nickname: 'second', host: 'b.example', networkCode: 'B' } },
              {
                priority: 0,
                host: { nickname: 'first', host: 'a.example', networkCode: 'NET;1', networkName: 'Inter;net' },
              },
            ],
          },
        ],
      },
    },
  });
  expect(restored.json).toEqual({ status: 'ok', message: 'Number of Destination(s) created: 1' });
  await h.addDestination('NOHOST');
});
afterAll(async () => {
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const put = async (q: Record<string, string>) => {
  const query = new URLSearchParams({ destination: 'SWEEPD', source: path.join(root, 'a.txt'), lifetime: '1h', ...q });
  const r = await h.call('GET', `/v1/datafile/put?${query}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
  return { fileId: r.json.id as number, transferId: t!.id };
};
const statusOf = async (transferId: number) =>
  (
    await h.db
      .select({ status: dataTransfers.status, message: dataTransfers.message })
      .from(dataTransfers)
      .where(eq(dataTransfers.id, transferId))
  )[0];

describe('sweepExpired', () => {
  it('fails live transfers past their expiry, one ERR entry each with the first host network code', async () => {
    const a = await put({ target: 'a.txt' });
    const b = await put({ target: 'b.txt', standby: 'true' });
    const c = await put({ target: 'c.txt' });
    await h.db.update(dataTransfers).set({ status: 'DONE' }).where(eq(dataTransfers.id, c.transferId));
    const d = await put({ target: 'd.txt' });
    expect((await h.call('DELETE', `/v1/datafile/del?id=${d.fileId}`, { auth: admin })).status).toBe(200);
    const e = await put({ target: 'e.txt', lifetime: '1d' });
    const f = await put({ destination: 'NOHOST', target: 'f;x\\y.txt', at: '+30m' });
    const g = await put({ target: 'g.txt', at: '+1h' }); // expires exactly at the sweep time
    const x = await put({ target: 'x.txt' }); // being sent: never expired
    await h.db.update(dataTransfers).set({ status: 'EXEC' }).where(eq(dataTransfers.id, x.transferId));
    h.events.length = 0;

    h.ports.clock = () => plus(120);
    expect(await sweepExpired(h.ports)).toBe(3);
    const err = (t: { transferId: number }, dest: string, type: string, file: string, scheduled: Date, code: string) =>
      `ERR;TimeStamp=${plus(120).getTime()};DataTransferId=${t.transferId};` +
      `DestinationName=${dest};DestinationType=${type};` +
      `FileName=${file};FileSize=5;ScheduledTime=${scheduled.getTime()};NetworkCode=${code};Message=${EXPIRED}`;
    expect(h.events).toEqual([
      err(a, 'SWEEPD', 'Time Critical', 'a.txt', T0, 'Inter\\;net'),
      err(b, 'SWEEPD', 'Time Critical', 'b.txt', T0, 'Inter\\;net'),
      err(f, 'NOHOST', 'Dissemination', 'f\\;x\\\\y.txt', plus(30), ''),
    ]);
    for (const t of [a, b, f]) expect(await statusOf(t.transferId)).toEqual({ status: 'FAIL', message: EXPIRED });
    expect(await statusOf(c.transferId)).toEqual({ status: 'DONE', message: null });
    expect((await statusOf(d.transferId))!.status).toBe('STOP');
    expect((await statusOf(e.transferId))!.status).toBe('WAIT');
    expect((await statusOf(g.transferId))!.status).toBe('WAIT');
    expect((await statusOf(x.transferId))!.status).toBe('EXEC');

    // a second sweep finds nothing more; a failed transfer no longer holds its unique key
    expect(await sweepExpired(h.ports)).toBe(0);
    expect(h.events).toHaveLength(3);
    expect((await put({ target: 'a.txt' })).fileId).not.toBe(a.fileId);

    h.ports.clock = () => plus(121);
    expect(await sweepExpired(h.ports)).toBe(1);
    expect(h.events[3]).toContain(`;DataTransferId=${g.transferId};`);
    expect((await statusOf(g.transferId))!.status).toBe('FAIL');
    h.ports.clock = () => T0;
  });
});

describe('event entries', () => {
  it('escape backslash, semicolon and line breaks so one entry stays one line', () => {
    const line = formatEvent('ERR', {
      A: 'x;y',
      B: 'l1\nl2',
      C: 'back\\slash',
      D: null,
      E: undefined,
      F: 'cr\r',
      G: 42,
      H: 'a\\;',
      I: 'k=v',
    });
    expect(line).toBe('ERR;A=x\\;y;B=l1\\nl2;C=back\\\\slash;D=;E=;F=cr\\r;G=42;H=a\\\\\\;;I=k=v');
    expect(line).not.toMatch(/[\r\n]/);
    // splitting at the unescaped separators gives back the fields
    const fields = line.match(/(?:[^;\\]|\\.)+/g)!;
    expect(fields).toHaveLength(10);
    expect(fields[8]).toBe('H=a\\\\\\;');
  });

  it('PRS and ERR carry their fields in the reference order, times in epoch ms', () => {
    expect(
      prsEvent({
        at: T0,
        code: 'INIT',
        product: 'p',
        step: 3,
        productTime: T0,
        type: 't',
        scheduledTime: null,
        lastUpdate: plus(1),
        error: 'e;1',
      }),
    ).toBe(
      `PRS;TimeStamp=${T0.getTime()};StatusCode=INIT;DataStream=p;TimeStep=3;TimeBase=${T0.getTime()};Type=t;` +
        `ScheduleTime=;LastUpdate=${plus(1).getTime()};ErrorMessage=e\\;1`,
    );
    expect(
      errEvent({
        at: T0,
        transferId: 7,
        destination: 'D',
        destinationType: 'Acquisition',
        fileName: 'f',
        fileSize: 0,
        scheduledTime: plus(2),
        networkCode: null,
        message: 'm\n',
      }),
    ).toBe(
      `ERR;TimeStamp=${T0.getTime()};DataTransferId=7;DestinationName=D;DestinationType=Acquisition;` +
        'FileName=f;FileSize=0;' +
        `ScheduledTime=${plus(2).getTime()};NetworkCode=;Message=m\\n`,
    );
  });
});

// The command runs on its own embedded data directory whatever the test database, so only the
// PGlite pass runs it.
describe.skipIf(onPostgres())('command line', () => {
  const run = promisify(execFile);
  const bin = new URL('../functions/bin/ecpds-edge.mjs', import.meta.url).pathname;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-cli-'));
    env = {
      ...process.env,
      ECPDS_DATA_DIR: path.join(dir, 'data'),
      ECPDS_EVENT_LOG: path.join(dir, 'events.log'),
      DATABASE_URL: '',
      ECPDS_SECRET_KEY: '',
    };
    fs.writeFileSync(path.join(dir, 'events.log'), 'PRE;existing\n');
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const cli = (...args: string[]) => run(process.execPath, [bin, ...args], { env, cwd: dir, timeout: SLOW });
  const logLines = () =>
    fs
      .readFileSync(path.join(dir, 'events.log'), 'utf8')
      .split('\n')
      .filter((l) => l !== '');

  const key = { product: 'cli', time: '00', step: 0, type: 'fc', productTime: '2030-01-01T00:00:00Z' };
  const lines = [
    JSON.stringify({ ...key, code: 'init', scheduledTime: '2030-01-01T06:00:00Z', at: '2030-01-01T01:00:00Z' }),
    JSON.stringify({ ...key, code: 'INIT', scheduledTime: '2030-01-01T06:00:00Z', at: '2030-01-01T01:30:00Z' }),
    '{not json',
    JSON.stringify({ ...key, step: 'x', code: 'EXEC' }),
    '   ',
    JSON.stringify({ ...key, product: 'other', step: 1, code: 'EXEC' }),
    JSON.stringify({ ...key, step: 99_999_999_999, code: 'INIT', scheduledTime: '2030-01-01T06:00:00Z' }),
    JSON.stringify({ ...key, code: 'DONE', at: '2030-01-01T02:00:00Z' }),
  ];

  it(
    'monitoring import: bad lines reported by number and skipped, counts summed, PRS entries appended',
    async () => {
      const file = path.join(dir, 'notes.ndjson');
      fs.writeFileSync(file, `${lines.join('\n')}\n`);
      const first = await cli('monitoring', 'import', file);
      expect(first.stdout).toBe('Notifications: 2 accepted, 1 ignored, 1 refused, 3 bad lines.\n');
      expect(first.stderr).toContain('line 3: not valid JSON; skipped\n');
      expect(first.stderr).toMatch(/line 4: step: [^\n]+; skipped\n/);
      expect(first.stderr).toMatch(/line 7: step: [^\n]+; skipped\n/);
      expect(first.stderr).not.toMatch(/line [1256]:/);
      const tb = Date.parse('2030-01-01T00:00:00Z');
      const log = logLines();
      expect(log).toHaveLength(3);
      expect(log[0]).toBe('PRE;existing');
      expect(log[1]).toMatch(
        new RegExp(
          `^PRS;TimeStamp=\\d+;StatusCode=INIT;DataStream=cli;TimeStep=0;TimeBase=${tb};Type=fc;` +
            `ScheduleTime=${tb + 6 * 3_600_000};LastUpdate=${tb + 3_600_000};` +
            'ErrorMessage=cli/00/0/fc: already expected$',
        ),
      );
      expect(log[2]).toMatch(
        new RegExp(
          `^PRS;TimeStamp=\\d+;StatusCode=EXEC;DataStream=other;TimeStep=1;TimeBase=${tb};Type=fc;` +
            'ScheduleTime=;LastUpdate=;ErrorMessage=other/00/1/fc: not found$',
        ),
      );

      // the data dir keeps what was accepted: the same file again is all ignored or refused
      const second = await cli('monitoring', 'import', file);
      expect(second.stdout).toBe('Notifications: 0 accepted, 3 ignored, 1 refused, 3 bad lines.\n');
      const again = logLines();
      expect(again).toHaveLength(7);
      expect(again.slice(3).map((l) => l.replace(/^.*ErrorMessage=/, ''))).toEqual([
        'cli/00/0/fc: already expected',
        'cli/00/0/fc: already expected',
        'other/00/1/fc: not found',
        'cli/00/0/fc: already completed',
      ]);
    },
    SLOW,
  );

  it(
    'monitoring import of a missing file fails with a message',
    async () => {
      const missing = path.join(dir, 'missing.ndjson');
      await expect(cli('monitoring', 'import', missing)).rejects.toMatchObject({
        code: 1,
        stderr: `ecpds-edge: cannot read ${missing}: no such file\n`,
      });
    },
    SLOW,
  );

  it(
    'sweep runs once and fails the expired transfers of the data dir',
    async () => {
      expect((await cli('sweep')).stdout).toBe(
        'Expired transfers failed: 0.\nPurged: 0 transfers, 0 history rows, 0 data files.\nStale multipart uploads aborted: 0.\n',
      );
      // the command runs on the real clock: this transfer expired a minute ago
      const scheduled = new Date(Math.floor(Date.now() / 1000) * 1000 - 3_600_000);
      const handle = await openPglite(path.join(dir, 'data', 'pgdata'));
      try {
        await handle.db.insert(destinations).values({ name: 'CLID', countryIso: 'gb', type: 1 });
        const [file] = await handle.db
          .insert(dataFiles)
          .values({ source: '/x/y.bin', size: 9, registeredBy: 'test' })
          .returning();
        await handle.db.insert(dataTransfers).values({
          dataFileId: file!.id,
          destination: 'CLID',
          target: 'y.bin',
          priority: 99,
          status: 'WAIT',
          scheduledAt: scheduled,
          expiresAt: new Date(Date.now() - 60_000),
        });
      } finally {
        await handle.close();
      }
      expect((await cli('sweep')).stdout).toBe(
        'Expired transfers failed: 1.\nPurged: 0 transfers, 0 history rows, 0 data files.\nStale multipart uploads aborted: 0.\n',
      );
      const last = logLines().at(-1)!;
      expect(last).toMatch(
        new RegExp(
          '^ERR;TimeStamp=\\d+;DataTransferId=\\d+;DestinationName=CLID;DestinationType=Dissemination;' +
            'FileName=y\\.bin;FileSize=9;' +
            `ScheduledTime=${scheduled.getTime()};NetworkCode=;Message=${EXPIRED}$`,
        ),
      );
      expect((await cli('sweep')).stdout).toBe(
        'Expired transfers failed: 0.\nPurged: 0 transfers, 0 history rows, 0 data files.\nStale multipart uploads aborted: 0.\n',
      );
    },
    SLOW,
  );
});

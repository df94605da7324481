import { count } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingest } from '../core/monitoring/handlers.ts';
import { rejection, type StepNotification, type StepState, statusLevel, stepEntry } from '../core/monitoring/model.ts';
import { stepNotifications, stepStatus } from '../db/schema.ts';
import { createHarness, type Harness } from './support/harness.ts';

const at = (iso: string) => new Date(iso);
const sec = (iso: string) => Date.parse(iso) / 1000;
const ENTRY_KEYS = [
  'product',
  'time',
  'buffer',
  'step',
  'type',
  'status',
  'statusCode',
  'statusLevel',
  'arrivalTime',
  'scheduledTime',
  'lastUpdate',
  'productTime',
  'minutesBeforeSchedule',
];

const state = (over: Partial<StepState> = {}): StepState => ({
  product: 'ens',
  time: '00',
  productTime: at('2026-03-02T00:00:00Z'),
  buffer: 0,
  step: 0,
  type: 'fc',
  code: 'INIT',
  scheduledTime: at('2026-03-02T04:00:00Z'),
  lastUpdate: at('2026-03-02T01:00:00Z'),
  ...over,
});

describe('statusLevel', () => {
  it.each([
    [45, 0, 'INIT', 1],
    [30, 0, 'INIT', 1],
    [29, 0, 'EXEC', 2],
    [15, 0, 'INIT', 2],
    [14, 0, 'INIT', 3],
    [0, 0, 'DONE', 3],
    [-1, 0, 'INIT', 4],
    [-60, 0, 'INIT', 4],
    [-61, 0, 'INIT', 5],
    [-500, 0, 'INIT', 5],
    [-61, 0, 'EXEC', 4],
    [-61, 0, 'DONE', 4],
    [-61, 0, 'STOP', 4],
    // buffer (ms) shifts the minutes: m = minutes + buffer / 60 000
    [20, 600_000, 'INIT', 1],
    [29, 30_000, 'INIT', 2],
    [29, 60_000, 'INIT', 1],
    [-5, 300_000, 'INIT', 3],
    [14, 30_000, 'INIT', 3],
    [-1, 30_000, 'INIT', 4],
    [-70, 600_000, 'INIT', 4],
    [-71, 600_000, 'INIT', 5],
    [-20, 1_200_000, 'INIT', 3],
  ])('minutes %i, buffer %i ms, code %s → %i', (minutes, buffer, code, level) => {
    expect(statusLevel(minutes, buffer, code)).toBe(level);
  });

  it('is -1 without a schedule, whatever the buffer or code', () => {
    expect(statusLevel(null, 0, 'INIT')).toBe(-1);
    expect(statusLevel(null, 3_600_000, 'DONE')).toBe(-1);
  });
});

describe('stepEntry', () => {
  const now = at('2026-03-02T03:00:00Z');

  it('has exactly the keys of wire-decisions §9, timestamps in epoch seconds', () => {
    const e = stepEntry(
      state({ productTime: at('2026-03-02T00:00:00.999Z'), lastUpdate: at('2026-03-02T01:00:00.500Z') }),
      now,
    );
    expect(Object.keys(e)).toEqual(ENTRY_KEYS);
    expect(e).toEqual({
      product: 'ens',
      time: '00',
      buffer: 0,
      step: 0,
      type: 'fc',
      status: 'Expected',
      statusCode: 'INIT',
      statusLevel: 1,
      arrivalTime: null,
      scheduledTime: sec('2026-03-02T04:00:00Z'),
      lastUpdate: sec('2026-03-02T01:00:00Z'),
      productTime: sec('2026-03-02T00:00:00Z'),
      minutesBeforeSchedule: 60,
    });
  });

  it.each([
    ['INIT', 'Expected'],
    ['EXEC', 'Started'],
    ['DONE', 'Completed'],
    ['STOP', 'STOP'],
    ['RETR', 'RETR'],
    ['init', 'init'],
  ])('maps code %s to status %s and keeps the raw code', (code, status) => {
    const e = stepEntry(state({ code }), now);
    expect(e.status).toBe(status);
    expect(e.statusCode).toBe(code);
  });

  it('arrivalTime is lastUpdate only for DONE, and DONE measures from arrival instead of now', () => {
    const done = stepEntry(state({ code: 'DONE', lastUpdate: at('2026-03-02T03:40:30Z') }), at('2026-03-09T00:00:00Z'));
    expect(done.arrivalTime).toBe(sec('2026-03-02T03:40:30Z'));
    expect(done.minutesBeforeSchedule).toBe(19);
    expect(done.statusLevel).toBe(2);
    const exec = stepEntry(state({ code: 'EXEC', lastUpdate: at('2026-03-02T03:40:30Z') }), now);
    expect(exec.arrivalTime).toBeNull();
    expect(exec.minutesBeforeSchedule).toBe(60);
  });

  it('truncates minutesBeforeSchedule toward zero on both sides of the schedule', () => {
    const sched = at('2026-03-02T04:00:00Z');
    expect(stepEntry(state({ scheduledTime: sched }), at('2026-03-02T03:58:31Z')).minutesBeforeSchedule).toBe(1);
    expect(stepEntry(state({ scheduledTime: sched }), at('2026-03-02T03:59:59Z')).minutesBeforeSchedule).toBe(0);
    expect(stepEntry(state({ scheduledTime: sched }), at('2026-03-02T04:01:29Z')).minutesBeforeSchedule).toBe(-1);
    expect(stepEntry(state({ scheduledTime: sched }), at('2026-03-02T04:00:59Z')).minutesBeforeSchedule).toBe(0);
  });

  it('an INIT more than 60 minutes late is level 5; without a schedule the level is -1', () => {
    expect(stepEntry(state(), at('2026-03-02T05:01:00Z')).statusLevel).toBe(5);
    expect(stepEntry(state(), at('2026-03-02T05:00:59Z')).statusLevel).toBe(4);
    const none = stepEntry(state({ scheduledTime: null }), now);
    expect(none).toMatchObject({ scheduledTime: null, minutesBeforeSchedule: null, statusLevel: -1 });
  });
});

describe('rejection', () => {
  const n = (code: string, scheduledTime: Date | null = at('2026-03-02T04:00:00Z')): StepNotification => ({
    product: 'ens',
    time: '00',
    step: 0,
    type: 'fc',
    buffer: 0,
    code,
    productTime: at('2026-03-02T00:00:00Z'),
    scheduledTime,
    at: at('2026-03-02T02:00:00Z'),
  });
  it.each([
    ['INIT', null, null, 'not found'],
    ['EXEC', null, null, 'not found'],
    ['DONE', null, null, 'not found'],
    ['INIT', 'sched', null, null],
    ['DONE', 'sched', null, null],
    ['EXEC', 'sched', null, 'not expected'],
    ['INIT', 'sched', 'INIT', 'already expected'],
    ['INIT', 'other', 'INIT', null],
    ['INIT', 'sched', 'DONE', 'already expected'],
    ['INIT', null, 'DONE', null],
    ['EXEC', null, 'INIT', null],
    ['EXEC', null, 'EXEC', 'not expected'],
    ['EXEC', null, 'DONE', 'not expected'],
    ['DONE', null, 'DONE', 'already completed'],
    ['DONE', null, 'INIT', null],
    ['DONE', null, 'EXEC', null],
    ['STOP', null, 'DONE', null],
  ])('%s (schedule %s) after %s → %s', (code, sched, latestCode, reason) => {
    const schedule = sched === null ? null : at(sched === 'sched' ? '2026-03-02T04:00:00Z' : '2026-03-02T05:00:00Z');
    expect(rejection(n(code, schedule), latestCode === null ? null : state({ code: latestCode }))).toBe(reason);
  });
});

const P2 = '2026-03-02T00:00:00Z';
const NOW = at('2026-03-02T05:00:00Z');
const note = (over: Partial<StepNotification> & { at: Date }): StepNotification => ({
  product: 'ens',
  time: '00',
  step: 0,
  type: 'fc',
  buffer: 0,
  code: 'INIT',
  productTime: at(P2),
  scheduledTime: null,
  ...over,
});

describe('ingestion', () => {
  let g: Harness;
  beforeAll(async () => {
    g = await createHarness();
    g.ports.clock = () => NOW;
  });
  afterAll(() => g.close());
  const rows = async () => (await g.db.select({ n: count() }).from(stepNotifications))[0]!.n;

  it('applies the reference rules and writes one PRS entry per dropped notification', async () => {
    const sched = at('2026-03-02T04:00:00Z');
    const lastInit = at('2026-03-02T01:00:00Z');
    expect(await ingest(g.ports, note({ code: 'EXEC', at: lastInit }))).toEqual({
      result: 'refused',
      reason: 'not found',
    });
    expect(await ingest(g.ports, note({ scheduledTime: sched, at: lastInit }))).toEqual({ result: 'accepted' });
    expect(await ingest(g.ports, note({ scheduledTime: sched, at: at('2026-03-02T01:30:00Z') }))).toEqual({
      result: 'ignored',
      reason: 'already expected',
    });
    expect(await ingest(g.ports, note({ code: 'EXEC', at: at('2026-03-02T02:00:00Z') }))).toEqual({
      result: 'accepted',
    });
    expect(await ingest(g.ports, note({ code: 'EXEC', at: at('2026-03-02T02:10:00Z') }))).toEqual({
      result: 'ignored',
      reason: 'not expected',
    });
    expect(await ingest(g.ports, note({ code: 'DONE', at: at('2026-03-02T03:00:00Z') }))).toEqual({
      result: 'accepted',
    });
    expect(await ingest(g.ports, note({ code: 'DONE', at: at('2026-03-02T03:10:00Z') }))).toEqual({
      result: 'ignored',
      reason: 'already completed',
    });
    expect(await rows()).toBe(3);
    const base = `StatusCode=%;DataStream=ens;TimeStep=0;TimeBase=${Date.parse(P2)};Type=fc;ScheduleTime=`;
    const line = (code: string, rest: string) => `PRS;TimeStamp=${NOW.getTime()};${base.replace('%', code)}${rest}`;
    expect(g.events).toEqual([
      line('EXEC', ';LastUpdate=;ErrorMessage=ens/00/0/fc: not found'),
      line('INIT', `${sched.getTime()};LastUpdate=${lastInit.getTime()};ErrorMessage=ens/00/0/fc: already expected`),
      line(
        'EXEC',
        `${sched.getTime()};LastUpdate=${Date.parse('2026-03-02T02:00:00Z')};ErrorMessage=ens/00/0/fc: not expected`,
      ),
      line(
        'DONE',
        `${sched.getTime()};LastUpdate=${Date.parse('2026-03-02T03:00:00Z')};` +
          'ErrorMessage=ens/00/0/fc: already completed',
      ),
    ]);
    const [latest] = await g.db.select().from(stepStatus);
    expect(latest).toMatchObject({ code: 'DONE', scheduledTime: sched, lastUpdate: at('2026-03-02T03:00:00Z') });
  });

  it('a new INIT with another schedule replaces the schedule; the key includes buffer and time base', async () => {
    g.events.length = 0;
    const resched = at('2026-03-02T06:00:00Z');
    expect((await ingest(g.ports, note({ scheduledTime: resched, at: at('2026-03-02T04:00:00Z') }))).result).toBe(
      'accepted',
    );
    expect((await ingest(g.ports, note({ buffer: 60_000, code: 'EXEC', at: NOW }))).result).toBe('refused');
    expect(
      (await ingest(g.ports, note({ productTime: at('2026-03-03T00:00:00Z'), code: 'DONE', at: NOW }))).result,
    ).toBe('refused');
    const [latest] = await g.db.select().from(stepStatus);
    expect(latest).toMatchObject({ code: 'INIT', scheduledTime: resched });
    expect(g.events).toHaveLength(2);
  });

  it('escapes separators of the values in the PRS entry', async () => {
    g.events.length = 0;
    await ingest(g.ports, note({ product: 'a;b', type: 'x\ny', code: 'EXEC', at: NOW }));
    expect(g.events).toHaveLength(1);
    expect(g.events[0]).not.toContain('\n');
    expect(g.events[0]).toContain(';DataStream=a\\;b;');
    expect(g.events[0]).toContain(';Type=x\\ny;');
    expect(g.events[0]).toMatch(/;ErrorMessage=a\\;b\/00\/0\/x\\ny: not found$/);
  });
});

describe('monitoring endpoints', () => {
  let h: Harness;
  let admin: string;
  const feed = (over: Partial<StepNotification> & { at: Date }) => ingest(h.ports, note(over));
  beforeAll(async () => {
    h = await createHarness();
    h.ports.clock = () => NOW;
    admin = await h.client('admin', ['monitoringSummaryList']);
    const t = (hm: string) => at(`2026-03-02T${hm}:00Z`);
    // an older time base of ens/00, absent from summaries
    await feed({
      productTime: at('2026-03-01T00:00:00Z'),
      scheduledTime: at('2026-03-01T04:00:00Z'),
      at: at('2026-03-01T01:00:00Z'),
    });
    await feed({ step: 6, scheduledTime: t('04:00'), at: t('01:00') });
    await feed({ step: 6, code: 'EXEC', at: t('03:00') });
    await feed({ step: 6, code: 'DONE', at: at('2026-03-02T03:40:30Z') });
    await feed({ step: 6, code: 'DONE', at: t('03:50') }); // ignored
    await feed({ scheduledTime: t('03:30'), at: t('01:00') });
    await feed({ type: 'an', scheduledTime: t('05:10'), at: t('01:00') });
    await feed({ buffer: 600_000, scheduledTime: t('05:20'), at: t('01:00') });
    await feed({
      time: '12',
      productTime: at('2026-03-02T12:00:00Z'),
      scheduledTime: at('2026-03-02T16:00:00Z'),
      at: t('02:00'),
    });
    await feed({ product: 'hres', step: 3, scheduledTime: t('05:00'), at: t('01:00') });
    await feed({ product: 'hres', step: 3, code: 'EXEC', at: t('04:50') });
  });
  afterAll(() => h.close());

  const get = async (path: string, auth = admin) => {
    const r = await h.call('GET', path, { auth });
    expect(r.status).toBe(200);
    expect(r.json.status).toBe('ok');
    return r.json;
  };
  const keys = (list: any[]) => list.map((e) => `${e.product}/${e.time}/${e.step}/${e.type}/${e.buffer}`);
  const ALL = [
    'ens/00/0/an/0',
    'ens/00/0/fc/0',
    'ens/00/0/fc/600000',
    'ens/00/6/fc/0',
    'ens/12/0/fc/0',
    'hres/00/3/fc/0',
  ];

  it('summary: latest time base, latest entry per (buffer, step, type), by product, time, step, type', async () => {
    const { stepStatusList } = await get('/v1/monitoring/summary');
    expect(keys(stepStatusList)).toEqual(ALL);
    for (const e of stepStatusList) expect(Object.keys(e)).toEqual(ENTRY_KEYS);
    expect(stepStatusList[3]).toEqual({
      product: 'ens',
      time: '00',
      buffer: 0,
      step: 6,
      type: 'fc',
      status: 'Completed',
      statusCode: 'DONE',
      statusLevel: 2,
      arrivalTime: sec('2026-03-02T03:40:30Z'),
      scheduledTime: sec('2026-03-02T04:00:00Z'),
      lastUpdate: sec('2026-03-02T03:40:30Z'),
      productTime: sec(P2),
      minutesBeforeSchedule: 19,
    });
    const levels = stepStatusList.map((e: any) => [e.status, e.minutesBeforeSchedule, e.statusLevel]);
    expect(levels).toEqual([
      ['Expected', 10, 3],
      ['Expected', -90, 5],
      ['Expected', 20, 1],
      ['Completed', 19, 2],
      ['Expected', 660, 1],
      ['Started', 0, 3],
    ]);
    expect(stepStatusList[0].productTime).toBe(sec(P2));
  });

  it.each([
    ['?product=ENS', ALL.slice(0, 5)],
    ['?product=en', []],
    ['?time=12', ['ens/12/0/fc/0']],
    ['?time=1', []],
    ['?step=6', ['ens/00/6/fc/0']],
    ['?step=%2B3', ['hres/00/3/fc/0']],
    ['?type=AN', ['ens/00/0/an/0']],
    ['?type=f', []],
    ['?status=done', ['ens/00/6/fc/0']],
    ['?status=Completed', []],
    ['?status=exec&product=HRES', ['hres/00/3/fc/0']],
    ['?step=99999999999', []],
  ])('summary filter %s', async (query, expected) => {
    expect(keys((await get(`/v1/monitoring/summary${query}`)).stepStatusList)).toEqual(expected);
  });

  it('summary/{product}: every cycle, case-insensitive; a product query cannot override the path', async () => {
    expect(keys((await get('/v1/monitoring/summary/ENS')).stepStatusList)).toEqual(ALL.slice(0, 5));
    expect(keys((await get('/v1/monitoring/summary/ens?product=hres')).stepStatusList)).toEqual(ALL.slice(0, 5));
    expect(keys((await get('/v1/monitoring/summary/ens?time=12&status=INIT')).stepStatusList)).toEqual([
      'ens/12/0/fc/0',
    ]);
    expect((await get('/v1/monitoring/summary/nothing')).stepStatusList).toEqual([]);
  });

  it('summary/{product}/{time}: one cycle; step and type filters, time query ignored', async () => {
    expect(keys((await get('/v1/monitoring/summary/Ens/00')).stepStatusList)).toEqual(ALL.slice(0, 4));
    expect(keys((await get('/v1/monitoring/summary/ens/00?time=12')).stepStatusList)).toEqual(ALL.slice(0, 4));
    expect(keys((await get('/v1/monitoring/summary/ens/00?step=0&type=FC')).stepStatusList)).toEqual(ALL.slice(1, 3));
  });

  it('history: every accepted notification of the step, newest first, under stepStatusHistoryList', async () => {
    const body = await get('/v1/monitoring/summary/ens/00/6/FC');
    expect(Object.keys(body)).toEqual(['status', 'stepStatusHistoryList']);
    const list = body.stepStatusHistoryList;
    for (const e of list) expect(Object.keys(e)).toEqual(ENTRY_KEYS);
    expect(list.map((e: any) => [e.statusCode, e.status, e.lastUpdate, e.arrivalTime, e.scheduledTime])).toEqual([
      ['DONE', 'Completed', sec('2026-03-02T03:40:30Z'), sec('2026-03-02T03:40:30Z'), sec('2026-03-02T04:00:00Z')],
      ['EXEC', 'Started', sec('2026-03-02T03:00:00Z'), null, sec('2026-03-02T04:00:00Z')],
      ['INIT', 'Expected', sec('2026-03-02T01:00:00Z'), null, sec('2026-03-02T04:00:00Z')],
    ]);
    const older = (await get('/v1/monitoring/summary/ens/00/0/fc')).stepStatusHistoryList;
    expect(older.map((e: any) => [e.productTime, e.buffer])).toEqual([
      [sec(P2), 600_000],
      [sec(P2), 0],
      [sec('2026-03-01T00:00:00Z'), 0],
    ]);
    const exec = (await get('/v1/monitoring/summary/ens/00/6/fc?status=exec')).stepStatusHistoryList;
    expect(exec.map((e: any) => e.statusCode)).toEqual(['EXEC']);
    expect((await get('/v1/monitoring/summary/ens/00/7/fc')).stepStatusHistoryList).toEqual([]);
    expect((await get('/v1/monitoring/summary/ens/00/99999999999/fc')).stepStatusHistoryList).toEqual([]);
  });

  it.each([
    ['/v1/monitoring/summary/ens/00/six/fc', 'six'],
    ['/v1/monitoring/summary/ens/00/6.0/fc', '6.0'],
    ['/v1/monitoring/summary?step=x', 'x'],
    ['/v1/monitoring/summary/ens?step=1e2', '1e2'],
    ['/v1/monitoring/summary/ens/00?step=%201', ' 1'],
  ])('400 for a non-integer step: %s', async (path, value) => {
    const r = await h.call('GET', path, { auth: admin });
    expect(r.status).toBe(400);
    expect(r.text).toBe(`Invalid value for parameter step: '${value}' (integer expected)`);
  });

  it('all four need the monitoringSummaryList permission', async () => {
    const other = await h.client('other', ['datafilePut|monitoringSummary']);
    for (const path of [
      '/v1/monitoring/summary',
      '/v1/monitoring/summary/ens',
      '/v1/monitoring/summary/ens/00',
      '/v1/monitoring/summary/ens/00/6/fc',
    ]) {
      const r = await h.call('GET', path, { auth: other });
      expect(r.status).toBe(500);
      expect(r.json).toEqual({ status: 'error', message: 'User not authorized' });
      expect((await h.call('GET', path)).status).toBe(401);
    }
  });
});

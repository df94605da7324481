import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../core/system/demo.ts';
import { parseConfig } from '../functions/node/config.ts';
import { openRuntime } from '../functions/node/runtime.ts';
import { runMain } from './support/in-process.ts';

/** `ecpds-edge destination start|hold|stop` through main() in this process, on the demo data of a temp dir. */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-destination-cli-'));
const LONG = 120_000; // each command opens the embedded database
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

async function withPorts<T>(work: (ports: Awaited<ReturnType<typeof openRuntime>>['ports']) => Promise<T>) {
  // No mover runs here to retrieve files: transfers are put straight into WAIT, as without a store.
  const runtime = await openRuntime(parseConfig({ ECPDS_DATA_DIR: dir, ECPDS_RETRIEVAL: 'none' }), quiet, {
    hold: false,
  });
  try {
    return await work(runtime.ports);
  } finally {
    await runtime.close();
  }
}
const cli = (...args: string[]) => runMain(args, { env: { ECPDS_DATA_DIR: dir } });
/**
 * Registers data files as `pipeline` through the put handler, on the command line's own database;
 * the source is taken as 4 bytes, so that no source root is needed. Answers the data file ids.
 */
const putAll = (inputs: Array<Record<string, unknown>>) =>
  withPorts(async (ports) => {
    const { put } = await import('../core/data-files/handlers.ts');
    ports.sources = { probe: async () => ({ size: 4 }) };
    const ctx = { ports, caller: { username: 'pipeline', showSensitiveInfo: false }, requestId: 'test' };
    const ids: number[] = [];
    for (const input of inputs) ids.push((await put({ ctx, input: input as never })).id);
    return ids;
  });
const statusOf = (name: string) => withPorts(async (ports) => (await ports.repos.destinations.get(name))?.statusCode);

beforeAll(() => withPorts((ports) => loadDemoData(ports)), LONG);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('ecpds-edge destination', () => {
  it(
    'starts, holds and stops a destination, each change audited',
    async () => {
      // The demo starts its active destinations.
      expect(await statusOf('DWD_OFFENBACH')).toBe('WAIT');
      for (const [action, code] of [
        ['start', 'WAIT'],
        ['hold', 'HOLD'],
        ['stop', 'STOP'],
        ['start', 'WAIT'],
      ] as const) {
        const r = await cli('destination', action, 'DWD_OFFENBACH');
        expect(r.status, r.stderr).toBe(0);
        expect(r.stdout).toBe(`Destination 'DWD_OFFENBACH' is now ${code}.\n`);
        expect(await statusOf('DWD_OFFENBACH')).toBe(code);
      }
      expect(await statusOf('FMI_HELSINKI')).toBe('INIT');
      const trail = await withPorts((ports) => ports.repos.console.auditTrail(10));
      expect(trail.slice(0, 4).map((a) => [a.actor, a.action, a.targetKind, a.target])).toEqual([
        ['cli', 'start destination', 'destination', 'DWD_OFFENBACH'],
        ['cli', 'stop destination', 'destination', 'DWD_OFFENBACH'],
        ['cli', 'hold destination', 'destination', 'DWD_OFFENBACH'],
        ['cli', 'start destination', 'destination', 'DWD_OFFENBACH'],
      ]);
    },
    LONG,
  );

  it(
    'refuses an unknown destination, and writes no audit row for it',
    async () => {
      const before = await withPorts((ports) => ports.repos.console.auditTrail(100));
      const r = await cli('destination', 'start', 'NO_SUCH_PLACE');
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('Destination NO_SUCH_PLACE not found');
      expect(await withPorts((ports) => ports.repos.console.auditTrail(100))).toEqual(before);
    },
    LONG,
  );

  it('asks for a name and a known action before it opens the database', async () => {
    const missing = await cli('destination', 'start');
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('usage: ecpds-edge destination start|hold|stop <name>');
    const unknown = await cli('destination', 'pause', 'DWD_OFFENBACH');
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain('start|hold|stop');
  });

  it(
    'option sets, shows, lists and removes an option, refusing a core WIS2 topic without an open-access user',
    async () => {
      const topic = 'origin/a/wis2/xx-ecpds/data/recommended/weather/fmi';
      const set = await cli('destination', 'option', 'FMI_HELSINKI', 'wis2.topic', topic);
      expect([set.status, set.stdout]).toEqual([
        0,
        `Option wis2.topic of destination 'FMI_HELSINKI' set to '${topic}'.\n`,
      ]);
      expect((await cli('destination', 'option', 'FMI_HELSINKI', 'wis2.topic')).stdout).toBe(`${topic}\n`);
      expect(JSON.parse((await cli('destination', 'option', 'FMI_HELSINKI')).stdout)).toMatchObject({
        'wis2.topic': topic,
      });
      const core = await cli(
        'destination',
        'option',
        'FMI_HELSINKI',
        'wis2.topic',
        topic.replace('recommended', 'core'),
      );
      expect(core.status).toBe(1);
      expect(core.stderr).toMatch(
        /announces core data.*destination FMI_HELSINKI has no active open-access incoming user/,
      );
      const removed = await cli('destination', 'option', 'FMI_HELSINKI', 'wis2.topic', '--unset');
      expect(removed.stdout).toBe("Option wis2.topic of destination 'FMI_HELSINKI' removed.\n");
      const unset = await cli('destination', 'option', 'FMI_HELSINKI', 'wis2.topic');
      expect([unset.status, unset.stderr]).toEqual([
        1,
        "ecpds-edge: wis2.topic is not set for destination 'FMI_HELSINKI'\n",
      ]);
    },
    LONG,
  );

  it('checks an option name and a WIS2 value before it opens the database', async () => {
    const cases: Array<[string[], string]> = [
      [['option'], 'usage: ecpds-edge destination option <name>'],
      [['option', 'FMI_HELSINKI', 'nodot', 'x'], 'Malformed name: nodot'],
      [['option', 'FMI_HELSINKI', 'wis2.topik', 'a/b'], 'Unknown WIS2 option wis2.topik'],
      [['option', 'FMI_HELSINKI', 'wis2.topic', 'origin/a/wis2/#'], 'Invalid value for wis2.topic'],
    ];
    for (const [args, message] of cases) {
      const r = await runMain(['destination', ...args], { env: { ECPDS_DATA_DIR: '/nonexistent/never-opened' } });
      expect([r.status, r.stderr]).toEqual([1, expect.stringContaining(message)]);
    }
  });
});

describe('ecpds-edge transfer', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-transfer-cli-src-'));
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it(
    'lists transfers by destination and status, and shows one with its history',
    async () => {
      const source = path.join(fs.realpathSync(root), 'a.grib');
      fs.writeFileSync(source, 'grib');
      const ids = await putAll([
        { destination: 'DWD_OFFENBACH', source, target: 'one.grib' },
        { destination: 'FMI_HELSINKI', source, target: 'two.grib', standby: true },
      ]);
      const all = await cli('transfer', 'list');
      expect(all.status, all.stderr).toBe(0);
      const listed = JSON.parse(all.stdout) as Array<{ id: number; dataFileId: number; status: string }>;
      expect(listed.map((t) => [t.dataFileId, t.status])).toEqual([
        [ids[1], 'HOLD'],
        [ids[0], 'WAIT'],
      ]);
      const held = await cli('transfer', 'list', '--status', 'hold');
      expect(JSON.parse(held.stdout).map((t: { target: string }) => t.target)).toEqual(['two.grib']);
      const byDestination = await cli('transfer', 'list', '--destination', 'DWD_OFFENBACH');
      expect(JSON.parse(byDestination.stdout).map((t: { target: string }) => t.target)).toEqual(['one.grib']);

      const shown = await cli('transfer', 'show', String(listed[1]!.id));
      expect(shown.status, shown.stderr).toBe(0);
      expect(JSON.parse(shown.stdout)).toMatchObject({
        destination: 'DWD_OFFENBACH',
        target: 'one.grib',
        status: 'WAIT',
        source,
        size: 4,
        history: [{ status: 'WAIT', comment: 'Registered by pipeline', error: false }],
      });
    },
    LONG,
  );

  it(
    'refuses an unknown status, a malformed id and an unknown transfer',
    async () => {
      const status = await cli('transfer', 'list', '--status', 'SENT');
      expect(status.status).toBe(1);
      expect(status.stderr).toContain("--status: 'SENT' (one of INIT, SCHE, FETC, WAIT");
      const id = await cli('transfer', 'show', 'x1');
      expect(id.stderr).toContain('transfer show needs the <id> of a transfer');
      const unknown = await cli('transfer', 'show', '999999');
      expect(unknown.status).toBe(1);
      expect(unknown.stderr).toContain('Transfer 999999 not found');
    },
    LONG,
  );
});

describe('ecpds-edge transfer requeue|hold|stop', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-transfer-change-src-'));
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
  const source = path.join(root, 'c.grib');

  async function putOne(target: string) {
    const [id] = await putAll([{ destination: 'IMO_REYKJAVIK', source, target }]);
    const [t] = await withPorts((ports) => ports.repos.transfers.list({ destination: 'IMO_REYKJAVIK', limit: 1 }));
    expect(t!.dataFileId).toBe(id);
    return t!.id;
  }
  const historyOf = (id: number) =>
    withPorts(async (ports) => (await ports.repos.transfers.history(id)).map((e) => [e.status, e.comment]));

  it(
    'holds, requeues and stops a transfer, with a history row and an audit row each',
    async () => {
      const id = await putOne('c1.grib');
      for (const [action, status] of [
        ['hold', 'HOLD'],
        ['requeue', 'RETR'],
        ['stop', 'STOP'],
      ] as const) {
        const r = await cli('transfer', action, String(id));
        expect(r.status, r.stderr).toBe(0);
        expect(r.stdout).toBe(`Transfer ${id} is now ${status}.\n`);
      }
      expect(await historyOf(id)).toEqual([
        ['WAIT', 'Registered by pipeline'],
        ['HOLD', 'hold by cli'],
        ['RETR', 'requeue by cli'],
        ['STOP', 'stop by cli'],
      ]);
      const trail = await withPorts((ports) => ports.repos.console.auditTrail(3));
      expect(trail.map((a) => [a.action, a.target])).toEqual([
        ['stop transfer', String(id)],
        ['requeue transfer', String(id)],
        ['hold transfer', String(id)],
      ]);
    },
    LONG,
  );

  it(
    'refuses what the reference refuses, and a requeue whose key another live transfer holds; nothing is written',
    async () => {
      const id = await putOne('c2.grib');
      const again = await cli('transfer', 'requeue', String(id));
      expect(again.status).toBe(1);
      expect(again.stderr).toContain('Transfer in WAIT cannot be requeued');

      expect((await cli('transfer', 'stop', String(id))).status).toBe(0);
      const successor = await putOne('c2.grib');
      expect(successor).not.toBe(id);
      const before = await withPorts((ports) => ports.repos.console.auditTrail(100));
      const taken = await cli('transfer', 'requeue', String(id));
      expect(taken.status).toBe(1);
      expect(taken.stderr).toContain('Another live transfer holds the same target and unique name');
      expect(await historyOf(id)).toEqual([
        ['WAIT', 'Registered by pipeline'],
        ['STOP', 'stop by cli'],
      ]);
      expect(await withPorts((ports) => ports.repos.console.auditTrail(100))).toEqual(before);
      const missing = await cli('transfer', 'hold', '999999');
      expect(missing.stderr).toContain('Transfer 999999 not found');
    },
    LONG,
  );
});

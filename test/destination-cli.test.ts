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
  const runtime = await openRuntime(parseConfig({ ECPDS_DATA_DIR: dir }), quiet, { hold: false });
  try {
    return await work(runtime.ports);
  } finally {
    await runtime.close();
  }
}
const cli = (...args: string[]) => runMain(args, { env: { ECPDS_DATA_DIR: dir } });
const statusOf = (name: string) => withPorts(async (ports) => (await ports.repos.destinations.get(name))?.statusCode);

beforeAll(() => withPorts((ports) => loadDemoData(ports)), LONG);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('ecpds-edge destination', () => {
  it(
    'starts, holds and stops a destination, each change audited',
    async () => {
      expect(await statusOf('DWD_OFFENBACH')).toBe('INIT');
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
});

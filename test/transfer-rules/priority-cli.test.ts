import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../../core/system/demo.ts';
import { parseConfig } from '../../functions/node/config.ts';
import { openRuntime } from '../../functions/node/runtime.ts';
import { runCli } from '../support/processes.ts';

/** `ecpds-edge transfer priority <id> <0-99>` as the compiled binary runs it, on the demo data of a temp dir. */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-priority-cli-'));
// No mover runs here to retrieve files: transfers are put straight into WAIT, as without a store.
const env = { ECPDS_DATA_DIR: dir, ECPDS_RETRIEVAL: 'none' };
const LONG = 180_000; // each command opens the embedded database
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

async function withPorts<T>(work: (ports: Awaited<ReturnType<typeof openRuntime>>['ports']) => Promise<T>) {
  const runtime = await openRuntime(parseConfig(env), quiet, { hold: false });
  try {
    return await work(runtime.ports);
  } finally {
    await runtime.close();
  }
}

let transferId: number;
beforeAll(
  () =>
    withPorts(async (ports) => {
      await loadDemoData(ports);
      // The default source root of the data dir.
      fs.mkdirSync(path.join(dir, 'outgoing'), { recursive: true });
      const source = path.join(fs.realpathSync(dir), 'outgoing', 'a.grib');
      fs.writeFileSync(source, 'grib');
      const { put } = await import('../../core/data-files/handlers.ts');
      const ctx = { ports, caller: { username: 'pipeline', showSensitiveInfo: false }, requestId: 'test' };
      const input = { destination: 'DWD_OFFENBACH', source, target: 'prio.grib' };
      const { id } = await put({ ctx, input: input as never });
      const [transfer] = (await ports.repos.transfers.list({ limit: 10 })).filter((t) => t.dataFileId === id);
      transferId = transfer!.id;
    }),
  LONG,
);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('ecpds-edge transfer priority', () => {
  it(
    'sets the priority, with a history row in the same status and an audit row',
    async () => {
      const r = runCli(['transfer', 'priority', String(transferId), '7'], env);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toBe(`Transfer ${transferId} priority changed from 99 to 7.\n`);
      const shown = runCli(['transfer', 'show', String(transferId)], env);
      expect(shown.status, shown.stderr).toBe(0);
      const transfer = JSON.parse(shown.stdout);
      expect(transfer).toMatchObject({ priority: 7, status: 'WAIT' });
      expect(transfer.history.at(-1)).toMatchObject({
        status: 'WAIT',
        comment: 'Priority changed from 99 to 7 by cli',
      });
      const trail = await withPorts((ports) => ports.repos.console.auditTrail(5));
      expect(trail[0]).toMatchObject({
        actor: 'cli',
        action: 'change transfer priority',
        targetKind: 'transfer',
        target: String(transferId),
        detail: 'priority 7',
      });
    },
    LONG,
  );

  it(
    'refuses a priority out of 0..99, one that is not a whole number, or none, before opening the database',
    () => {
      for (const [value, message] of [
        ['100', 'Priority out of range (0..99): 100'],
        ['-3', 'Priority out of range (0..99): -3'],
        ['1.5', "Priority must be a whole number from 0 to 99: '1.5'"],
        ['high', "Priority must be a whole number from 0 to 99: 'high'"],
      ]) {
        const r = runCli(['transfer', 'priority', String(transferId), value!], env);
        expect(r.status, value).toBe(1);
        expect(r.stderr).toContain(message);
      }
      const missing = runCli(['transfer', 'priority', String(transferId)], env);
      expect(missing.status).toBe(1);
      expect(missing.stderr).toContain('transfer priority needs a <priority> from 0 to 99');
    },
    LONG,
  );

  it(
    'refuses an unknown transfer',
    () => {
      const r = runCli(['transfer', 'priority', '99999999', '5'], env);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('Transfer 99999999 not found');
    },
    LONG,
  );
});

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../db/client.ts';
import { parseConfig } from '../../functions/node/config.ts';
import { openRuntime } from '../../functions/node/runtime.ts';
import { runMain } from '../support/in-process.ts';

/** `ecpds-edge host output <id>`: the last run of an Acquisition host, on the command line's own database. */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-host-output-'));
const LONG = 120_000; // each command opens the embedded database
const quiet = { info: () => {}, warn: () => {}, error: () => {} };
const cli = (...args: string[]) => runMain(args, { env: { ECPDS_DATA_DIR: dir } });
let hostId = 0;

beforeAll(async () => {
  const runtime = await openRuntime(parseConfig({ ECPDS_DATA_DIR: dir }), quiet, { hold: false });
  try {
    const { db } = runtime.handle;
    await db.execute(sql`insert into destinations (name, country_iso, type) values ('ACQ', 'gb', 0)`);
    const [host] = rowsOf<{ hostid: number }>(
      await db.execute(sql`insert into hosts (type, nickname, host, dir)
        values ('Acquisition', 'partner', 'example.org', '/data/{.*\\.grib}') returning hostid`),
    );
    hostId = Number(host!.hostid);
    await db.execute(sql`insert into destination_hosts (destination, hostid) values ('ACQ', ${hostId})`);
    await db.execute(sql`update destinations set status_code = 'WAIT' where name = 'ACQ'`);
    const repo = runtime.ports.repos.acquisition;
    const [claim] = await repo.claim('mover-1', 60_000, 1, 10);
    expect(claim?.host.hostId).toBe(String(hostId));
    const output = [
      'Listing /data (/data/{.*\\.grib})',
      '  a.grib (ACQ/a.grib): selected: scheduled with DataFileId=7',
    ];
    expect(
      await repo.finish('mover-1', hostId, { outcome: 'done', output: output.join('\n'), counts: {} }, 60_000),
    ).toBe(true);
  } finally {
    await runtime.close();
  }
}, LONG);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('ecpds-edge host output', () => {
  it(
    'prints the last run: how it ended, when the next is due, then each entry',
    async () => {
      const r = await cli('host', 'output', String(hostId));
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const [header, ...lines] = r.stdout.trimEnd().split('\n');
      expect(header).toMatch(
        new RegExp(`^Host ${hostId}: last run listed to its end, started \\S+Z, ended \\S+Z; next run due \\S+Z$`),
      );
      expect(lines).toEqual([
        'Listing /data (/data/{.*\\.grib})',
        '  a.grib (ACQ/a.grib): selected: scheduled with DataFileId=7',
      ]);
    },
    LONG,
  );

  it(
    'a host never listed, or not a number: a clear error and a failing exit code',
    async () => {
      const never = await cli('host', 'output', '999999');
      expect(never.status).toBe(1);
      expect(never.stderr).toContain('Host 999999 has no acquisition run');
      const bad = await cli('host', 'output', 'abc');
      expect(bad.status).toBe(1);
      expect(bad.stderr).toContain('host output needs the <id> of a host');
    },
    LONG,
  );
});

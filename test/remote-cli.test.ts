import { spawn } from 'node:child_process';
import fs from 'node:fs';
import type { Server } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingest } from '../core/monitoring/handlers.ts';
import { loadDemoData } from '../core/system/demo.ts';
import { dataFiles } from '../db/schema.ts';
import type { NodeConfig } from '../functions/node/config.ts';
import { expandPatterns } from '../functions/node/glob.ts';
import { loadTls } from '../functions/node/tls.ts';
import { createHarness, type Harness } from './support/harness.ts';
import { runMain } from './support/in-process.ts';

const BIN = fileURLToPath(new URL('../functions/bin/ecpds-edge.mjs', import.meta.url));
let h: Harness;
let server: Server;
let url: string;
let dir: string;
let secret: string;
/** How many of the next API requests the front answers 503 (a database restarting). */
let unavailable = 0;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The command line through main(), in this process (the server answers from it too). */
type Options = { env?: Record<string, string>; input?: string; cwd?: string };
async function cli(args: string[], options: Options = {}): Promise<Run> {
  const r = await runMain(args, {
    env: { ECPDS_URL: url, ECPDS_USERNAME: 'pipeline', ECPDS_SECRET: secret, ...options.env },
    cwd: options.cwd ?? dir,
    input: options.input,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The real binary in a child process; asynchronous, since the server runs in this process. */
function spawnCli(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const { ECPDS_URL: _u, ECPDS_USERNAME: _n, ECPDS_SECRET: _s, ECPDS_INSECURE: _i, ...inherited } = process.env;
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: dir,
      env: { ...inherited, ECPDS_URL: url, ECPDS_USERNAME: 'pipeline', ECPDS_SECRET: secret },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end();
  });
}
const lines = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-remote-'));
  fs.mkdirSync(path.join(dir, 'out', 'deep'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'out', 'a.grib'), 'a'.repeat(100));
  fs.writeFileSync(path.join(dir, 'out', 'b.grib'), 'b'.repeat(200));
  fs.writeFileSync(path.join(dir, 'out', 'deep', 'c.grib'), 'c'.repeat(300));
  fs.writeFileSync(path.join(dir, 'out', 'notes.txt'), 'not data');
  h = await createHarness({ sourceRoots: [path.join(dir, 'out')] });
  await loadDemoData(h.ports);
  const auth = await h.client('pipeline', ['.*']);
  secret = Buffer.from(auth.slice('Basic '.length), 'base64').toString().slice('pipeline:'.length);
  const tls = await loadTls({ dataDir: dir, tlsCertFile: null, tlsKeyFile: null } as NodeConfig);
  const front = (request: Request) => {
    if (unavailable > 0 && new URL(request.url).pathname.startsWith('/v1/')) {
      unavailable--;
      return Response.json({ status: 'error', message: 'Service unavailable: database unreachable' }, { status: 503 });
    }
    return h.app.fetch(request);
  };
  server = await new Promise<Server>((resolve) => {
    const s = serve(
      { fetch: front, hostname: '127.0.0.1', port: 0, createServer: https.createServer, serverOptions: tls },
      () => resolve(s as Server),
    );
  });
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections?.();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('ecpds-edge put', () => {
  it('registers each file a glob matches, by absolute path, a JSON line each; exit code counts failures', async () => {
    const r = await cli([
      'put',
      '--insecure',
      '--json',
      '--destination',
      'MO_EXETER',
      '--priority',
      '5',
      '--lifetime',
      '1d',
      'out/**/*.grib',
      'missing.grib',
    ]);
    expect(r.code).toBe(1);
    const results = lines(r.stdout);
    expect(results).toHaveLength(4);
    expect(results.find((x) => x.file === 'missing.grib')).toEqual({
      file: 'missing.grib',
      ok: false,
      status: null,
      error: 'no such file',
      attempts: 0,
    });
    const ok = results.filter((x) => x.ok);
    expect(ok.map((x) => x.file).sort()).toEqual(
      ['a.grib', 'b.grib', 'deep/c.grib'].map((f) => path.join(dir, 'out', f)),
    );
    for (const x of ok) {
      const [file] = await h.db.select().from(dataFiles).where(eq(dataFiles.id, x.id));
      expect(file?.source).toBe(x.file);
      expect(file?.size).toBe(fs.statSync(x.file).size);
    }
  });

  it('reports each refused file and counts them in the exit code', async () => {
    const outside = path.join(dir, 'outside.grib');
    fs.writeFileSync(outside, 'x');
    const r = await cli([
      'put',
      '--insecure',
      '--destination',
      'MO_EXETER',
      '--concurrency',
      '2',
      outside,
      'out/a.grib',
      'out/notes.txt',
      '--uniquename',
      'second',
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`^FAIL  ${outside}  HTTP 500: .+$`, 'm'));
    expect(r.stdout).toMatch(/^ok {4}.+a\.grib {2}id=\d+$/m);
    expect(r.stdout).toMatch(/^ok {4}.+notes\.txt {2}id=\d+$/m);
    expect(r.stderr).toContain('2 of 3 file(s) registered for MO_EXETER, 1 failed.');
  });

  it('caps the exit code at 100 failures', async () => {
    const missing = Array.from({ length: 101 }, (_, i) => `none-${i}.grib`);
    const r = await cli(['put', '--insecure', '--json', '--destination', 'MO_EXETER', ...missing]);
    expect(lines(r.stdout)).toHaveLength(101);
    expect(r.code).toBe(100);
  });

  it('retries a 503 with backoff, and gives up after --retries', async () => {
    unavailable = 2;
    const r = await cli([
      'put',
      '--insecure',
      '--json',
      '--retry-delay',
      '1',
      '--destination',
      'MO_EXETER',
      '--uniquename',
      'retried',
      'out/b.grib',
    ]);
    expect(r.code).toBe(0);
    expect(lines(r.stdout)).toEqual([expect.objectContaining({ ok: true, attempts: 3 })]);
    unavailable = 5;
    const gaveUp = await cli([
      'put',
      '--insecure',
      '--json',
      '--retries',
      '1',
      '--retry-delay',
      '1',
      '--destination',
      'MO_EXETER',
      '--uniquename',
      'never',
      'out/b.grib',
    ]);
    expect(gaveUp.code).toBe(1);
    expect(lines(gaveUp.stdout)).toEqual([
      expect.objectContaining({
        ok: false,
        status: 503,
        error: 'Service unavailable: database unreachable',
        attempts: 2,
      }),
    ]);
    unavailable = 0;
  });

  it('refuses the self-signed certificate without --insecure, and checks options before touching files', async () => {
    const r = await cli(['put', '--destination', 'MO_EXETER', 'out/a.grib', '--uniquename', 'strict']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('certificate not trusted');
    const bad = await cli(['put', '--insecure', '--destination', 'MO_EXETER', '--priority', '100', 'out/a.grib']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("--priority: '100' (integer from 0 to 99 expected)");
  });
});

describe('the real binary', () => {
  it('put registers a file and prints its JSON line', async () => {
    const r = await spawnCli([
      'put',
      '--insecure',
      '--json',
      '--destination',
      'MO_EXETER',
      '--uniquename',
      'spawned',
      'out/a.grib',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [line] = lines(r.stdout);
    expect(line).toEqual({ file: path.join(dir, 'out', 'a.grib'), ok: true, id: expect.any(Number), attempts: 1 });
    const [file] = await h.db.select().from(dataFiles).where(eq(dataFiles.id, line.id));
    expect(file?.source).toBe(line.file);
  });
});

describe('credentials and configuration', () => {
  it('never takes credentials from the command line', async () => {
    const r = await cli(['size', '1', '--secret', 'x']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('credentials are never taken from the command line');
  });

  it('reads url, credentials and insecure from --config <file.json>', async () => {
    const file = path.join(dir, 'remote.json');
    fs.writeFileSync(file, JSON.stringify({ url, username: 'pipeline', secret, insecure: true }), { mode: 0o600 });
    const r = await cli(['summary', '--config', file], {
      env: { ECPDS_URL: '', ECPDS_USERNAME: '', ECPDS_SECRET: '' },
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const missing = await cli(['summary', '--insecure'], { env: { ECPDS_SECRET: '' } });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no credentials');
  });
});

describe('size, del, summary, metadata', () => {
  it('size and del a data file', async () => {
    const put = await cli([
      'put',
      '--insecure',
      '--json',
      '--destination',
      'MO_EXETER',
      '--uniquename',
      'sized',
      'out/deep/c.grib',
    ]);
    const [{ id }] = lines(put.stdout);
    const size = await cli(['size', String(id)], { env: { ECPDS_INSECURE: '1' } });
    expect(size).toMatchObject({ code: 0, stdout: '300\n' });
    expect((await cli(['del', String(id), '--insecure'])).stdout).toBe(`DataFile ${id} deleted.\n`);
    const again = await cli(['del', String(id), '--insecure']);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe('ecpds-edge: HTTP 500: Already deleted\n');
  });

  it('summary prints the step status table', async () => {
    const at = (iso: string) => new Date(iso);
    await ingest(h.ports, {
      product: 'Smoke',
      time: '00',
      step: 1,
      type: 'fc',
      buffer: 0,
      code: 'INIT',
      productTime: at('2025-03-10T00:00:00Z'),
      scheduledTime: at('2025-03-10T06:00:00Z'),
      at: at('2025-03-10T03:00:00Z'),
    });
    const r = await cli(['summary', 'Smoke', '00', '--insecure']);
    expect(r.code).toBe(0);
    const [head, row] = r.stdout.trim().split('\n');
    expect(head).toMatch(
      /^PRODUCT\s+TIME\s+STEP\s+TYPE\s+STATUS\s+CODE\s+LEVEL\s+SCHEDULED \(UTC\)\s+ARRIVAL \(UTC\)\s+MIN BEFORE$/,
    );
    expect(row).toMatch(/^Smoke\s+00\s+1\s+fc\s+Expected\s+INIT\s+5\s+2025-03-10 06:00\s+-\s+-?\d+$/);
    const json = await cli(['summary', '--insecure', '--json', '--type', 'fc']);
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ product: 'Smoke', statusCode: 'INIT' })]);
  });

  it('metadata get to a file, edit, put back from a file and from stdin', async () => {
    const file = path.join(dir, 'meta.json');
    expect((await cli(['metadata', 'get', 'MO_EXETER', file, '--insecure'])).code).toBe(0);
    const meta = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(meta).toMatchObject({ success: 'yes', destination: 'MO_EXETER' });
    meta.metadata.General.notes = 'Edited by a pipeline';
    fs.writeFileSync(file, JSON.stringify(meta));
    const put = await cli(['metadata', 'put', 'MO_EXETER', file, '--insecure']);
    expect(put.code).toBe(0);
    expect(put.stdout).toMatch(/^Destination MO_EXETER: \d+ value\(s\) stored\.\n$/);
    const auth = `Basic ${Buffer.from(`pipeline:${secret}`).toString('base64')}`;
    expect((await h.call('GET', '/v1/destination/MO_EXETER/metadata', { auth })).json.metadata.General.notes).toBe(
      'Edited by a pipeline',
    );
    meta.metadata.General.notes = 'From stdin';
    expect((await cli(['metadata', 'put', 'MO_EXETER', '-', '--insecure'], { input: JSON.stringify(meta) })).code).toBe(
      0,
    );
    expect((await h.call('GET', '/v1/destination/MO_EXETER/metadata', { auth })).json.metadata.General.notes).toBe(
      'From stdin',
    );
  });
});

describe('pattern expansion', () => {
  it('expands *, ?, [...] and ** like a shell, skipping dot files, and reports what matched nothing', () => {
    const base = path.join(dir, 'globs');
    for (const f of [
      'x1.grib',
      'x2.grib',
      'y1.grib',
      '.hidden.grib',
      'sub/x3.grib',
      'sub/deeper/x4.grib',
      '.dot/x5.grib',
    ]) {
      fs.mkdirSync(path.dirname(path.join(base, f)), { recursive: true });
      fs.writeFileSync(path.join(base, f), f);
    }
    const rel = (files: string[]) => files.map((f) => path.relative(base, f));
    expect(rel(expandPatterns(['*.grib'], base).files)).toEqual(['x1.grib', 'x2.grib', 'y1.grib']);
    expect(rel(expandPatterns(['x?.grib', '[!x]*.grib'], base).files)).toEqual(['x1.grib', 'x2.grib', 'y1.grib']);
    expect(rel(expandPatterns(['**/x*.grib'], base).files)).toEqual([
      'sub/deeper/x4.grib',
      'sub/x3.grib',
      'x1.grib',
      'x2.grib',
    ]);
    expect(rel(expandPatterns(['.*.grib', 'x1.grib', './x1.grib'], base).files)).toEqual(['.hidden.grib', 'x1.grib']);
    expect(expandPatterns(['*.nc', 'sub', 'gone.grib'], base).problems).toEqual([
      { pattern: '*.nc', reason: 'no file matches' },
      { pattern: 'sub', reason: 'not a regular file' },
      { pattern: 'gone.grib', reason: 'no such file' },
    ]);
  });
});

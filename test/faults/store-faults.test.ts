import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ports } from '../../core/ports.ts';
import { type DbHandle, rowsOf } from '../../db/client.ts';
import { freshPostgres } from '../support/database.ts';
import { eventually } from '../support/engine.ts';
import {
  freePort,
  killAll,
  removeTempDirs,
  request,
  startMoverProcess,
  startServer,
  tempDir,
} from '../support/processes.ts';
import { startS3 } from '../support/servers/s3.ts';
import { type SlowSource, startSlowSource } from '../support/servers/slow-source.ts';
import {
  addDestination,
  adminOf,
  filesUnder,
  historyOf,
  putThrough,
  SECRET_KEY,
  sceneOf,
  transfersOf,
} from '../support/store-scene.ts';
import { scaled } from '../support/time.ts';

/**
 * The store failing under the real server: refused at start, reported by /healthz, down or full
 * while files are retrieved (puts still accepted, every file delivered once it is back), and a
 * server killed in the middle of a retrieval.
 */
const asRoot = process.getuid?.() === 0;
const url = process.env.TEST_DATABASE_URL;
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const S3_SECRET = `store-secret-${randomBytes(6).toString('hex')}`;

afterAll(async () => {
  await killAll();
  removeTempDirs();
});

const mounted: string[] = [];
function mountTmpfs(dir: string, options: string) {
  execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir]);
  mounted.push(dir);
}
afterAll(() => {
  for (const dir of mounted.splice(0)) execFileSync('umount', ['-l', dir]);
});

describe('the store probed at start', () => {
  it.skipIf(!asRoot)('refuses to start on a directory it cannot write, naming the store and the error', async () => {
    const store = tempDir('ecpds-ro-store-');
    // Root writes through any file mode: only a read-only file system stops it.
    mountTmpfs(store, 'ro,size=1m');
    const server = startServer({
      ECPDS_DATA_DIR: path.join(tempDir(), 'data'),
      ECPDS_STORE_URL: store,
      PORT: String(await freePort()),
      ECPDS_MOVER: '0',
    });
    expect(await server.exited).not.toBe(0);
    expect(server.output()).toContain(
      `Store directory ${store}: the probe's write failed: EROFS: read-only file system`,
    );
    expect(server.logs().some((l) => l.msg === 'listening')).toBe(false);
  });

  it('refuses to start, server or mover, on an S3 store that does not answer, never showing the secret', async () => {
    const port = await freePort();
    const env = {
      ECPDS_DATA_DIR: path.join(tempDir(), 'data'),
      ECPDS_STORE_URL: 's3://nowhere-bucket/objects',
      ECPDS_STORE_S3_ENDPOINT: `http://127.0.0.1:${port}`,
      ECPDS_STORE_S3_ACCESS_KEY_ID: 'AKIDPROBE',
      ECPDS_STORE_S3_SECRET_ACCESS_KEY: S3_SECRET,
      PORT: String(await freePort()),
    };
    for (const start of [startServer, startMoverProcess]) {
      // One after the other: both hold the same embedded database.
      const proc = start(env);
      expect(await proc.exited).not.toBe(0);
      const output = proc.output();
      expect(output).toContain(
        `Store s3://nowhere-bucket/objects at http://127.0.0.1:${port}: the probe's write failed`,
      );
      expect(output).toMatch(/ECONNREFUSED|refused/i);
      expect(output).not.toContain(S3_SECRET);
    }
  });
});

describe.skipIf(!url)('the store failing under a running server (Postgres)', () => {
  let handle: DbHandle & { url: string };
  let ports: Ports;
  beforeAll(async () => {
    handle = await freshPostgres(url!);
    ports = sceneOf(handle);
  });
  afterAll(async () => {
    await killAll();
    await handle?.close();
  });

  async function serve(extra: Record<string, string>, dataDir = path.join(tempDir(), 'data')) {
    const server = startServer({
      DATABASE_URL: handle.url,
      ECPDS_SECRET_KEY: SECRET_KEY,
      ECPDS_DATA_DIR: dataDir,
      PORT: String(await freePort()),
      ECPDS_MOVER_POLL_MS: '100',
      ECPDS_MOVER_HEARTBEAT_SECONDS: '1',
      ECPDS_SWEEP_SECONDS: '0',
      ...extra,
    });
    return { server, base: await server.ready };
  }
  const health = async (base: string) => (await request(base, 'GET', '/healthz')).json;
  let admin: string | null = null;
  const adminFrom = (server: Parameters<typeof adminOf>[0]) => (admin ??= adminOf(server));

  it.skipIf(!asRoot)(
    'full: retrievals fail saying there is no space, puts are accepted, and it is delivered once space is freed',
    async () => {
      const root = tempDir('ecpds-full-');
      const store = path.join(root, 'store');
      const src = path.join(root, 'src');
      const out = path.join(root, 'out');
      const events = path.join(root, 'events.log');
      fs.mkdirSync(store);
      fs.mkdirSync(src);
      mountTmpfs(store, 'size=2m');
      const { server, base } = await serve({
        ECPDS_STORE_URL: store,
        ECPDS_SOURCE_ROOTS: src,
        ECPDS_FILE_HOST_ROOTS: out,
        ECPDS_EVENT_LOG: events,
      });
      const auth = adminFrom(server);
      expect(await health(base)).toEqual({
        status: 'ok',
        store: { status: 'ok', description: `directory ${store}` },
      });
      await addDestination(ports, base, auth, 'FULL', [{ method: 'file', dir: path.join(out, 'FULL') }]);

      // The file system filled by something else on the machine.
      const filler = path.join(store, 'filler');
      const fd = fs.openSync(filler, 'w');
      try {
        for (;;) fs.writeSync(fd, Buffer.alloc(64 * 1024, 1));
      } catch (e) {
        expect((e as NodeJS.ErrnoException).code).toBe('ENOSPC');
      } finally {
        fs.closeSync(fd);
      }
      const bytes = randomBytes(512 * 1024);
      fs.writeFileSync(path.join(src, 'full.bin'), bytes);
      const id = await putThrough(base, auth, 'FULL', path.join(src, 'full.bin'), 'full.bin');
      expect(id).toBeGreaterThan(0);

      const [t] = await transfersOf(handle, 'FULL');
      const failedLine = await eventually(
        async () =>
          fs.existsSync(events)
            ? fs
                .readFileSync(events, 'utf8')
                .split('\n')
                .find((l) => l.startsWith('ERR') && /no space left on device/i.test(l))
            : undefined,
        20_000,
        'an ERR line saying there is no space',
      );
      expect(failedLine).toContain('full.bin');
      expect((await historyOf(handle, t!.id)).map((h) => h.comment).join('\n')).toMatch(/no space left on device/i);
      const degraded = await eventually(async () => {
        const h = await health(base);
        return h.status === 'degraded' ? h : undefined;
      }, 20_000);
      expect(degraded.store).toMatchObject({ status: 'failing', description: `directory ${store}` });
      expect(degraded.store.reason).toMatch(/no space left on device/i);
      expect(fs.existsSync(path.join(out, 'FULL', 'full.bin'))).toBe(false);

      fs.rmSync(filler);
      await eventually(
        async () => ((await transfersOf(handle, 'FULL'))[0]?.status === 'DONE' ? true : undefined),
        60_000,
        'DONE once space is freed',
      );
      expect(md5(fs.readFileSync(path.join(out, 'FULL', 'full.bin')))).toBe(md5(bytes));
      await eventually(async () => ((await health(base)).status === 'ok' ? true : undefined), 20_000);
      expect(await server.stop()).toBe(true);
    },
    scaled(180_000),
  );

  it(
    'S3 down during retrievals: they fail saying so, puts are accepted, and everything is delivered once it is back',
    async () => {
      const s3 = await startS3('fault-store');
      const root = tempDir('ecpds-s3-down-');
      const src = path.join(root, 'src');
      const slowDir = path.join(root, 'slow');
      const out = path.join(root, 'out');
      const events = path.join(root, 'events.log');
      fs.mkdirSync(src);
      fs.mkdirSync(slowDir);
      let slow: SlowSource | null = null;
      try {
        slow = await startSlowSource(slowDir, 64 * 1024);
        const { server, base } = await serve({
          ECPDS_STORE_URL: 's3://fault-store/objects',
          ECPDS_STORE_S3_ENDPOINT: s3.url,
          ECPDS_STORE_S3_ACCESS_KEY_ID: s3.accessKeyId,
          ECPDS_STORE_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
          ECPDS_SOURCE_ROOTS: src,
          ECPDS_SOURCE_HOSTS: slow.host,
          ECPDS_FILE_HOST_ROOTS: out,
          ECPDS_EVENT_LOG: events,
        });
        const auth = adminFrom(server);
        const description = `s3://fault-store/objects at ${s3.url}`;
        expect(await health(base)).toEqual({ status: 'ok', store: { status: 'ok', description } });
        await addDestination(ports, base, auth, 'S3DOWN', [{ method: 'file', dir: path.join(out, 'S3DOWN') }]);

        const sent = new Map<string, Buffer>();
        // Slow ones first: being read when the store goes away.
        for (let i = 0; i < 3; i++) {
          const name = `slow-${i}.bin`;
          sent.set(name, randomBytes(192 * 1024));
          fs.writeFileSync(path.join(slowDir, name), sent.get(name)!);
          await putThrough(base, auth, 'S3DOWN', slow.url(name), name);
        }
        await eventually(
          async () => ((await transfersOf(handle, 'S3DOWN')).every((t) => t.status === 'FETC') ? true : undefined),
          20_000,
          'all three being retrieved',
        );
        await s3.down();
        // Puts while it is down are accepted as ever.
        for (let i = 0; i < 3; i++) {
          const name = `put-while-down-${i}.bin`;
          sent.set(name, randomBytes(32 * 1024));
          fs.writeFileSync(path.join(src, name), sent.get(name)!);
          await putThrough(base, auth, 'S3DOWN', path.join(src, name), name);
        }
        await eventually(
          async () => {
            const lines = fs.existsSync(events) ? fs.readFileSync(events, 'utf8').split('\n') : [];
            const failed = lines.filter((l) => l.startsWith('ERR') && l.includes(description));
            return [...sent.keys()].every((name) => failed.some((l) => l.includes(name))) ? true : undefined;
          },
          60_000,
          'an ERR line naming the store for every file',
        );
        const transfers = await transfersOf(handle, 'S3DOWN');
        for (const t of transfers) {
          const comments = (await historyOf(handle, t.id)).map((h) => h.comment ?? '').join('\n');
          expect(comments, t.target).toMatch(/Retrieval failed on DataMover=.*Store s3:\/\/fault-store\/objects at/);
          expect(comments).not.toContain(S3_SECRET);
        }
        const degraded = await eventually(async () => {
          const h = await health(base);
          return h.status === 'degraded' ? h : undefined;
        }, 20_000);
        expect(degraded.store).toMatchObject({ status: 'failing', description });
        expect(JSON.stringify(degraded)).not.toContain(s3.secretAccessKey);
        expect(filesUnder(path.join(out, 'S3DOWN')).size).toBe(0);

        await s3.up();
        await eventually(
          async () => ((await transfersOf(handle, 'S3DOWN')).every((t) => t.status === 'DONE') ? true : undefined),
          90_000,
          'every file DONE once the store is back',
        );
        const delivered = filesUnder(path.join(out, 'S3DOWN'));
        expect([...delivered.keys()].sort()).toEqual([...sent.keys()].sort());
        for (const [name, bytes] of sent) expect(md5(delivered.get(name)!), name).toBe(md5(bytes));
        expect(await server.stop()).toBe(true);
      } finally {
        await slow?.stop();
        await s3.stop();
      }
    },
    scaled(240_000),
  );

  it(
    'a server killed in the middle of a retrieval leaves no half object under the file; after a restart it is stored',
    async () => {
      const root = tempDir('ecpds-killed-');
      const slowDir = path.join(root, 'slow');
      const out = path.join(root, 'out');
      const dataDir = path.join(root, 'data');
      const store = path.join(dataDir, 'store');
      fs.mkdirSync(slowDir);
      const slow = await startSlowSource(slowDir, 128 * 1024);
      try {
        const env = {
          ECPDS_SOURCE_HOSTS: slow.host,
          ECPDS_FILE_HOST_ROOTS: out,
          ECPDS_MOVER_LEASE_SECONDS: '2',
        };
        const first = await serve(env, dataDir);
        const auth = adminFrom(first.server);
        await addDestination(ports, first.base, auth, 'KILLED', [{ method: 'file', dir: path.join(out, 'KILLED') }]);
        const bytes = randomBytes(1024 * 1024);
        fs.writeFileSync(path.join(slowDir, 'big.bin'), bytes);
        const id = await putThrough(first.base, auth, 'KILLED', slow.url('big.bin'), 'big.bin');
        // Killed once part of it is in the store, well before its end.
        await eventually(async () => (slow.served() > 256 * 1024 ? true : undefined), 20_000, 'part of it read');
        const partial = [...filesUnder(store).keys()];
        expect(partial.some((k) => path.basename(k).startsWith('.partial-'))).toBe(true);
        first.server.child.kill('SIGKILL');
        await first.server.exited;

        const file = async () =>
          rowsOf<{ object_key: string | null; objects: number }>(
            await handle.db.execute(sql`
              select object_key, (select count(*)::int from stored_objects s where s.data_file_id = f.id) as objects
              from data_files f where f.id = ${id}`),
          )[0]!;
        expect(await file()).toEqual({ object_key: null, objects: 0 });

        const second = await serve(env, dataDir);
        await eventually(
          async () => ((await transfersOf(handle, 'KILLED'))[0]?.status === 'DONE' ? true : undefined),
          60_000,
          'DONE after the restart',
        );
        const after = await file();
        expect(after.objects).toBe(1);
        // The object the file points at is whole: its size and bytes are the registered ones.
        const stored = fs.readFileSync(path.join(store, after.object_key!));
        expect(md5(stored)).toBe(md5(bytes));
        const [row] = rowsOf<{ size: number; md5: string }>(
          await handle.db.execute(sql`select size::int as size, md5 from stored_objects where data_file_id = ${id}`),
        );
        expect(row).toEqual({ size: bytes.byteLength, md5: md5(bytes) });
        expect(md5(fs.readFileSync(path.join(out, 'KILLED', 'big.bin')))).toBe(md5(bytes));
        expect(await second.server.stop()).toBe(true);
      } finally {
        await slow.stop();
      }
    },
    scaled(180_000),
  );
});

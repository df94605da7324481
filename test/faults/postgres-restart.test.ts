import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importFields } from '../../core/metadata/fields.ts';
import { contractProblems } from '../support/contract.ts';
import { createHarness, type Harness, type Reply } from '../support/harness.ts';
import { type Cluster, startCluster } from '../support/pg-cluster.ts';
import { basic, freePort, killAll, removeTempDirs, startServer, tempDir } from '../support/processes.ts';
import { scaled } from '../support/time.ts';

/**
 * Postgres stops in the middle of a mixed load and comes back. While it is down every request
 * answers 503 JSON; afterwards the same app serves again; no metadata PUT and no backup restore
 * is left half applied. Starts its own throwaway cluster, so it runs only with
 * ECPDS_FAULT_TESTS=1 (it needs the PostgreSQL server binaries and, as root, the postgres user).
 */
const enabled = process.env.ECPDS_FAULT_TESTS === '1';

// A request that takes longer than this counts as hung; far above any healthy answer.
const HANG_MS = 20_000;
const METADATA_WORKERS = 4;
const RESTORE_WORKERS = 2;
const READERS = 2;

type Phase = 'up' | 'stopping' | 'down' | 'starting' | 'recovering';
interface Outcome {
  worker: string;
  began: Phase;
  ended: Phase;
  status: number | 'hung';
  reply?: Reply;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `done` holds; fails after `limit` polls (scaled to the machine) so a stuck phase ends the test. */
async function until(what: string, done: () => boolean, limit = 1200) {
  for (let i = 0; !done(); i++) {
    if (i >= scaled(limit)) throw new Error(`gave up waiting for ${what}`);
    await sleep(50);
  }
}

const metadataBody = (destination: string, generation: number) => {
  const tag = `${destination}:${generation}`;
  return {
    metadata: { General: { alpha: `${tag}:a`, beta: `${tag}:b`, gamma: [`${tag}:c1`, `${tag}:c2`, `${tag}:c3`] } },
  };
};

const restoreNames = (worker: number, n: number) => ['A', 'B', 'C'].map((x) => `R${worker}_${n}_${x}`);
const restoreBody = (worker: number, n: number) => {
  const names = restoreNames(worker, n);
  return {
    backup: {
      destinations: names.map((name) => ({
        destination: { name, countryIso: 'gb', type: 1, ecuserName: 'fault' },
        associations: [
          {
            priority: 0,
            host: {
              nickname: name.toLowerCase(),
              host: 'h.example.org',
              transferMethodName: 'sftp',
              ecuserName: 'fault',
            },
          },
        ],
      })),
      aliases: [{ aliasFrom: names[0], aliasTo: names[1] }],
      ecusers: [{ name: 'fault', uid: 1, gid: 1, dir: '/home/fault', shell: '/bin/sh', comment: null }],
      methods: [
        {
          name: 'sftp',
          ectransModuleName: 'sftp',
          value: null,
          restrict: false,
          resolve: true,
          comment: null,
          active: true,
          ectransModule: { name: 'sftp', classe: 'x', archive: null, active: true },
        },
      ],
    },
  };
};

describe.skipIf(!enabled)('Postgres stops and restarts under load', () => {
  let cluster: Cluster | null = null;
  let h: Harness | null = null;
  let admin: string;

  beforeAll(async () => {
    cluster = await startCluster();
    // The harness makes (and later drops) a fresh database on the server of TEST_DATABASE_URL.
    process.env.TEST_DATABASE_URL = cluster.url;
    h = await createHarness();
    admin = await h.client('fault-admin', ['.*']);
    await importFields(h.ports, 'test', [
      { name: 'alpha', label: 'Alpha', type: 'text', category: 'General', position: 1 },
      { name: 'beta', label: 'Beta', type: 'text', category: 'General', position: 2 },
      { name: 'gamma', label: 'Gamma', type: 'text', category: 'General', position: 3, maxOccurs: -1 },
    ]);
    for (let i = 0; i < METADATA_WORKERS; i++) {
      await h.addDestination(`F_${i}`);
      const r = await h.call('PUT', `/v1/destination/F_${i}/metadata`, {
        auth: admin,
        body: metadataBody(`F_${i}`, 0),
      });
      expect(r.status).toBe(200);
    }
  }, scaled(120_000));

  afterAll(async () => {
    // Everything is thrown away with the cluster, even when the test failed half way.
    await killAll();
    removeTempDirs();
    await h?.close().catch(() => undefined);
    await cluster?.destroy();
  });

  it(
    'answers 503 while it is down, serves again once it is back, and applies nothing by halves',
    async () => {
      const app = h!;
      let phase: Phase = 'up';
      let running = true;
      const outcomes: Outcome[] = [];

      async function request(worker: string, method: string, path: string, body?: unknown): Promise<Outcome> {
        const began = phase;
        let timer: ReturnType<typeof setTimeout> | undefined;
        const hung = new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), HANG_MS)));
        const reply = await Promise.race([app.call(method, path, { auth: admin, body }), hung]).finally(() =>
          clearTimeout(timer),
        );
        const outcome: Outcome =
          reply === 'hung'
            ? { worker, began, ended: phase, status: 'hung' }
            : { worker, began, ended: phase, status: reply.status, reply };
        outcomes.push(outcome);
        return outcome;
      }

      // Each metadata worker owns one destination and writes numbered generations to it in turn.
      const metadata = Array.from({ length: METADATA_WORKERS }, () => ({ attempted: 0, acknowledged: 0 }));
      const restores = Array.from({ length: RESTORE_WORKERS }, () => ({
        attempted: 0,
        acknowledged: new Set<number>(),
      }));
      const workers: Array<Promise<void>> = [];
      for (let i = 0; i < METADATA_WORKERS; i++) {
        workers.push(
          (async () => {
            while (running) {
              const generation = ++metadata[i]!.attempted;
              const o = await request(
                `metadata${i}`,
                'PUT',
                `/v1/destination/F_${i}/metadata`,
                metadataBody(`F_${i}`, generation),
              );
              if (o.status === 200) metadata[i]!.acknowledged = generation;
              await sleep(10);
            }
          })(),
        );
      }
      for (let j = 0; j < RESTORE_WORKERS; j++) {
        workers.push(
          (async () => {
            while (running) {
              const n = ++restores[j]!.attempted;
              const o = await request(`restore${j}`, 'PUT', '/v1/destination/backup', restoreBody(j, n));
              if (o.status === 200) restores[j]!.acknowledged.add(n);
              await sleep(10);
            }
          })(),
        );
      }
      for (let k = 0; k < READERS; k++) {
        workers.push(
          (async () => {
            for (let n = 0; running; n++) {
              await request(`reader${k}`, 'GET', n % 2 ? '/v1/destination/list' : `/v1/destination/F_${k}/metadata`);
              await sleep(10);
            }
          })(),
        );
      }
      const names = [...Array(METADATA_WORKERS).keys()]
        .map((i) => `metadata${i}`)
        .concat(
          [...Array(RESTORE_WORKERS).keys()].map((j) => `restore${j}`),
          [...Array(READERS).keys()].map((k) => `reader${k}`),
        );
      const count = (worker: string, test: (o: Outcome) => boolean) =>
        outcomes.filter((o) => o.worker === worker && test(o)).length;
      const lastAre200 = (worker: string, n: number) => {
        const mine = outcomes.filter((o) => o.worker === worker && o.began === 'recovering');
        return mine.length >= n && mine.slice(-n).every((o) => o.status === 200);
      };

      try {
        await until('a healthy start', () =>
          names.every((w) => count(w, (o) => o.began === 'up' && o.status === 200) >= 3),
        );
        phase = 'stopping';
        await cluster!.stop();
        phase = 'down';
        await until('requests while down', () =>
          names.every((w) => count(w, (o) => o.began === 'down' && o.ended === 'down') >= 3),
        );
        phase = 'starting';
        await cluster!.start();
        phase = 'recovering';
        await until('recovery', () => names.every((w) => lastAre200(w, 3)));
      } catch (e) {
        const summary = new Map<string, number>();
        for (const o of outcomes)
          summary.set(
            `${o.worker} ${o.began}→${o.ended} ${o.status}`,
            (summary.get(`${o.worker} ${o.began}→${o.ended} ${o.status}`) ?? 0) + 1,
          );
        throw new Error(`${(e as Error).message}; answers so far: ${JSON.stringify(Object.fromEntries(summary))}`);
      } finally {
        running = false;
        await Promise.allSettled(workers);
      }

      // No request hung, and every answer kept to the contract.
      expect(outcomes.filter((o) => o.status === 'hung')).toEqual([]);
      for (const o of outcomes) expect(contractProblems(o.reply!), `${o.worker} ${o.began}→${o.ended}`).toEqual([]);
      // Before the stop everything worked; while down everything was a 503 saying so; in between, one or the other.
      const statuses = (test: (o: Outcome) => boolean) =>
        [...new Set(outcomes.filter(test).map((o) => o.status))].sort();
      expect(statuses((o) => o.began === 'up' && o.ended === 'up')).toEqual([200]);
      expect(statuses((o) => o.began === 'down' && o.ended === 'down')).toEqual([503]);
      expect(statuses(() => true).every((s) => s === 200 || s === 503)).toBe(true);
      for (const o of outcomes.filter((x) => x.status === 503)) {
        expect(Object.keys(o.reply!.json).sort()).toEqual(['message', 'status']);
        expect(o.reply!.json.status).toBe('error');
        expect(o.reply!.json.message).toMatch(/^Service unavailable: /);
      }
      expect(outcomes.filter((o) => o.status === 503).length).toBeGreaterThanOrEqual(names.length * 3);
      for (const o of outcomes.filter((x) => x.worker.startsWith('restore') && x.status === 200)) {
        expect(o.reply!.json.message).toBe('Number of Destination(s) created: 3');
      }

      // Each destination holds exactly one generation's values: the last acknowledged one, or a
      // later one whose commit landed while its answer was lost.
      for (let i = 0; i < METADATA_WORKERS; i++) {
        const r = await app.call('GET', `/v1/destination/F_${i}/metadata`, { auth: admin });
        expect(r.status).toBe(200);
        const values: string[] = [
          r.json.metadata.General.alpha,
          r.json.metadata.General.beta,
          ...r.json.metadata.General.gamma,
        ];
        const generations = new Set(values.map((v) => Number(v.split(':')[1])));
        expect(generations.size, `F_${i}: ${values.join(', ')}`).toBe(1);
        const [generation] = generations;
        expect(values).toEqual(Object.values(metadataBody(`F_${i}`, generation!).metadata.General).flat());
        expect(generation!).toBeGreaterThanOrEqual(metadata[i]!.acknowledged);
        expect(generation!).toBeLessThanOrEqual(metadata[i]!.attempted);
      }

      // Each restore is there whole (three destinations, each with its host) or not at all.
      const backup = await app.call('GET', '/v1/destination/backup', { auth: admin });
      expect(backup.status).toBe(200);
      const hostsOf = new Map<string, number>(
        backup.json.backup.destinations.map((d: { destination: { name: string }; associations: unknown[] }) => [
          d.destination.name,
          d.associations.length,
        ]),
      );
      const aliases = new Set(
        backup.json.backup.aliases.map((a: { aliasFrom: string; aliasTo: string }) => `${a.aliasFrom}>${a.aliasTo}`),
      );
      for (let j = 0; j < RESTORE_WORKERS; j++) {
        for (let n = 1; n <= restores[j]!.attempted; n++) {
          const names3 = restoreNames(j, n);
          const present = names3.filter((name) => hostsOf.has(name));
          expect([0, 3], `restore ${j}/${n}: ${present.join(', ')}`).toContain(present.length);
          if (restores[j]!.acknowledged.has(n)) expect(present.length, `acknowledged restore ${j}/${n}`).toBe(3);
          if (present.length === 3) {
            expect(names3.map((name) => hostsOf.get(name))).toEqual([1, 1, 1]);
            expect(aliases.has(`${names3[0]}>${names3[1]}`)).toBe(true);
          }
        }
      }
    },
    scaled(180_000),
  );

  it(
    'the ecpds-edge server process survives the restart and serves again',
    async () => {
      const server = startServer({
        DATABASE_URL: cluster!.url,
        ECPDS_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
        PORT: String(await freePort()),
        ECPDS_DATA_DIR: path.join(tempDir('ecpds-fault-'), 'data'),
        ECPDS_SWEEP_SECONDS: '0',
      });
      const url = await server.ready;
      const secret = /Its secret is shown this once:\s+(\S+)/.exec(server.output())?.[1];
      expect(secret).toBeTruthy();
      const auth = basic('admin', secret!);

      let phase: Phase = 'up';
      let running = true;
      const outcomes: Array<{ began: Phase; ended: Phase; status: number | string }> = [];
      const workers = Array.from({ length: 8 }, async (_, w) => {
        for (let n = 0; running && !server.hasExited(); n++) {
          const began = phase;
          // Writes in transactions and reads, as in the test above, but over HTTPS to the real process.
          const status = await (w % 2
            ? send(url, 'PUT', '/v1/destination/backup', auth, restoreBody(100 + w, n))
            : send(url, 'GET', '/v1/destination/list', auth)
          ).catch((e: Error) => e.message);
          outcomes.push({ began, ended: phase, status });
          await sleep(10);
        }
      });
      const seen = (test: (o: (typeof outcomes)[number]) => boolean) => outcomes.filter(test).length;
      try {
        await until(
          'a healthy start',
          () => server.hasExited() || seen((o) => o.began === 'up' && o.status === 200) >= 16,
        );
        phase = 'stopping';
        await cluster!.stop();
        phase = 'down';
        await until(
          'requests while down',
          () => server.hasExited() || seen((o) => o.began === 'down' && o.ended === 'down') >= 16,
        );
        phase = 'starting';
        await cluster!.start();
        phase = 'recovering';
        await until(
          'recovery',
          () => server.hasExited() || seen((o) => o.began === 'recovering' && o.status === 200) >= 16,
        );
      } finally {
        running = false;
        await Promise.allSettled(workers);
      }
      const crash = server
        .output()
        .split('\n')
        .filter((l) => /Error|^\s+at /.test(l) && !l.startsWith('{'))
        .slice(0, 6)
        .join('\n');
      expect(server.hasExited(), `the server exited while Postgres restarted:\n${crash}`).toBe(false);
      expect(seen((o) => o.began === 'down' && o.ended === 'down' && o.status !== 503)).toBe(0);
      expect(await server.stop()).toBe(true);
    },
    scaled(180_000),
  );
});

/** One HTTPS request with a JSON body to the server process; resolves with the status. */
function send(base: string, method: string, p: string, auth: string, body?: unknown): Promise<number> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const r = https.request(
      new URL(p, base),
      {
        method,
        rejectUnauthorized: false,
        agent: false,
        timeout: HANG_MS,
        headers: {
          authorization: auth,
          ...(payload && { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    r.on('timeout', () => r.destroy(new Error('hung')));
    r.on('error', reject);
    r.end(payload);
  });
}

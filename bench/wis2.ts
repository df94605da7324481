/**
 * WIS2 notification latency (BENCHMARKS.md, "WIS2 notifications"): `ecpds-edge serve` (the
 * compiled build) with ECPDS_MQTT_URL pointing at a Mosquitto started here, and an MQTT.js
 * subscriber in this process. Files are put one at a time through datafile/put; each one's latency
 * runs from the moment the put's answer arrived (the file is registered) to the moment its message
 * arrived at the subscriber, the file retrieved into the store in between. On the embedded database
 * and on Postgres (BENCH_DATABASE_URL, default the local server), FILES files each (default 200) after
 * a warm-up of WARMUP.
 *
 *   npm run build && node --import tsx bench/wis2.ts
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import mqtt from 'mqtt';
import postgres from 'postgres';
import type { Wnm } from '../core/wis2/message.ts';
import { type DbHandle, openPostgres } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { openPglite } from '../db/pglite.ts';
import { destinations } from '../db/schema.ts';
import {
  addBenchClient,
  auth,
  freePort,
  log,
  machine,
  secretKey,
  start,
  stop,
  untilListening,
  waitFor,
  writeBenchFile,
} from './support.ts';

process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const FILES = Number(process.env.BENCH_WIS2_FILES ?? 200);
const WARMUP = 20;
const FILE_BYTES = 64 * 1024;
const TOPIC = 'origin/a/wis2/xx-ecpds/data/recommended/weather/bench';
const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');

/** Debian's Mosquitto on a port of its own, in memory. */
async function startMosquitto(tmp: string) {
  const port = await freePort();
  const config = path.join(tmp, 'mosquitto.conf');
  fs.writeFileSync(config, `listener ${port} 127.0.0.1\nallow_anonymous true\nlog_dest none\n`);
  const child = spawn('/usr/sbin/mosquitto', ['-c', config], { stdio: 'ignore' });
  await untilListening(port);
  return { url: `mqtt://127.0.0.1:${port}`, child };
}

/** The bench's destination, publishing on TOPIC, and the bench's API client. */
async function seed(handle: DbHandle) {
  await migrate(handle);
  await addBenchClient(handle);
  await handle.db.insert(destinations).values({ name: 'WIS2', countryIso: 'gb', type: 1 }).onConflictDoNothing();
  await handle.db
    .update(destinations)
    .set({ data: `wis2.topic = "${TOPIC}"` })
    .where(eq(destinations.name, 'WIS2'));
  await handle.close();
}

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))] ?? 0;

async function measure(label: string, tmp: string, brokerUrl: string, env: Record<string, string>) {
  const port = await freePort();
  const sources = path.join(tmp, `src-${label}`);
  fs.mkdirSync(sources, { recursive: true });
  const server: ChildProcess = start(['functions/bin/ecpds-edge.mjs', 'serve'], {
    ...env,
    HOST: '127.0.0.1',
    PORT: String(port),
    ECPDS_DEMO: '0',
    ECPDS_PORTAL_SFTP_PORT: '0',
    ECPDS_PORTAL_S3_PORT: '0',
    // Its retriever stores each file put (a notice announces the stored copy); the destination has no host.
    ECPDS_MOVER: '1',
    ECPDS_SWEEP_SECONDS: '0',
    ECPDS_SOURCE_ROOTS: sources,
    ECPDS_MQTT_URL: brokerUrl,
    ECPDS_SECRET_KEY: secretKey,
  });
  const base = `https://127.0.0.1:${port}`;
  try {
    await waitFor(`${base}/v1/system/version`);
    const arrived = new Map<string, number>();
    const waiting = new Map<string, () => void>();
    const sub = await mqtt.connectAsync(brokerUrl, { clean: true });
    sub.on('message', (_topic, raw) => {
      const at = performance.now();
      const id = (JSON.parse(raw.toString('utf8')) as Wnm).properties.data_id;
      arrived.set(id, at);
      waiting.get(id)?.();
    });
    await sub.subscribeAsync(TOPIC, { qos: 1 });
    const latencies: number[] = [];
    const puts: number[] = [];
    for (let i = 0; i < WARMUP + FILES; i++) {
      const target = `${label}/f${i}.bin`;
      const source = path.join(sources, `f${i}.bin`);
      fs.writeFileSync(source, Buffer.alloc(FILE_BYTES, i));
      const received = new Promise<void>((resolve) => waiting.set(`WIS2/${target}`, resolve));
      const query = new URLSearchParams({ destination: 'WIS2', source, target });
      const started = performance.now();
      const r = await fetch(`${base}/v1/datafile/put?${query}`, { headers: { authorization: auth } });
      if (r.status !== 200) throw new Error(`put: ${r.status} ${await r.text()}`);
      const registered = performance.now();
      await received;
      if (i >= WARMUP) {
        puts.push(registered - started);
        latencies.push(arrived.get(`WIS2/${target}`)! - registered);
      }
    }
    await sub.endAsync();
    const row = {
      label,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: Math.max(...latencies),
      putP50: percentile(puts, 50),
    };
    log(`${label}: ${JSON.stringify(row)}`);
    return row;
  } finally {
    await stop(server);
  }
}

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-bench-wis2-'));
  const broker = await startMosquitto(tmp);
  const rows = [];
  try {
    const dataDir = path.join(tmp, 'data');
    fs.mkdirSync(dataDir);
    await seed(await openPglite(path.join(dataDir, 'pgdata')));
    rows.push(await measure('embedded', tmp, broker.url, { ECPDS_DATA_DIR: dataDir }));

    const name = `ecpds_bench_wis2_${Date.now().toString(36)}`;
    const admin = postgres(PG.toString(), { max: 1, onnotice: () => undefined });
    await admin.unsafe(`create database "${name}"`);
    try {
      const url = new URL(PG);
      url.pathname = `/${name}`;
      await seed(openPostgres(url.toString(), { max: 2 }));
      rows.push(
        await measure('postgres', tmp, broker.url, {
          ECPDS_DATA_DIR: path.join(tmp, 'data-pg'),
          DATABASE_URL: url.toString(),
        }),
      );
    } finally {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    }
  } finally {
    broker.child.kill('SIGTERM');
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const ms = (v: number) => v.toFixed(1);
  writeBenchFile(
    [
      '## WIS2 notifications',
      '',
      `\`node --import tsx bench/wis2.ts\` (after \`npm run build\`), ${new Date().toISOString().slice(0, 10)}, ` +
        `${machine()}. \`ecpds-edge serve\` with \`ECPDS_MQTT_URL\` set to Debian's Mosquitto on loopback, an ` +
        `MQTT.js subscriber of the destination's topic in the bench's process. ${FILES} files of 64 KiB are put ` +
        `one at a time with datafile/put (after ${WARMUP} not counted); a file's latency runs from the put's ` +
        "answer (the file is registered, its outbox row committed) to its message's arrival: the embedded " +
        "mover's retriever stores the file with its sums, the publisher is woken, claims the row, publishes " +
        'the stored copy with QoS 1, waits for the PUBACK and marks the row published. Target: p50 ≤ 100 ms.',
      '',
      '| Database | Latency p50 | p99 | max | datafile/put p50 (for scale) |',
      '| -------- | ----------- | --- | --- | ---------------------------- |',
      ...rows.map((r) => `| ${r.label} | ${ms(r.p50)} ms | ${ms(r.p99)} ms | ${ms(r.max)} ms | ${ms(r.putP50)} ms |`),
    ].join('\n'),
  );
}

await main();

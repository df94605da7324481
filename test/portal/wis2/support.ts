import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import mqtt from 'mqtt';
import { expect } from 'vitest';
import { MAX_MESSAGE_BYTES, WNM_CONFORMANCE, type Wnm } from '../../../core/wis2/message.ts';
import { type PublisherOptions, startWis2Publisher } from '../../../core/wis2/publisher.ts';
import type { Database } from '../../../db/client.ts';
import { wis2OutboxRepo } from '../../../db/repositories/wis2-outbox.ts';
import { destinations } from '../../../db/schema.ts';
import { nodeSourceReader } from '../../../functions/node/sources.ts';
import { mqttBroker, sourceSha512 } from '../../../functions/node/wis2.ts';
import { freePort } from '../../support/processes.ts';
import { incomingUser, type PortalScene, portalScene } from '../support.ts';

/**
 * Debian's Mosquitto on a port of its own, with a persistent store: a subscriber's session and the
 * messages queued for it survive a stop and a start, as they do on a production broker.
 */
export async function startMosquitto() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-mosquitto-'));
  // Started as root, Mosquitto runs as its own user, which must be able to write its store here.
  fs.chmodSync(dir, 0o777);
  const port = await freePort();
  const config = path.join(dir, 'mosquitto.conf');
  fs.writeFileSync(
    config,
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      'persistence true',
      `persistence_location ${dir}/`,
      'log_dest none',
    ].join('\n'),
  );
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn('/usr/sbin/mosquitto', ['-c', config], { stdio: 'ignore' });
    await untilListening(port);
  };
  const stop = async () => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null) return;
    await new Promise((resolve) => {
      running.once('exit', resolve);
      running.kill('SIGTERM');
    });
  };
  await start();
  return {
    url: `mqtt://127.0.0.1:${port}`,
    start,
    stop,
    async close() {
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
export type Mosquitto = Awaited<ReturnType<typeof startMosquitto>>;

async function untilListening(port: number) {
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A message as a subscriber received it. */
export interface Received {
  topic: string;
  raw: Buffer;
  message: Wnm;
  retain: boolean;
}

/** Messages as they arrive, and a wait for the `count`th of a topic. */
export function arrivals<R extends Received>() {
  const received: R[] = [];
  const waiters = new Set<() => void>();
  return {
    received,
    arrived(message: R) {
      received.push(message);
      for (const w of waiters) w();
    },
    /**
     * Waits until `count` messages arrived on `topic`, and answers them in their order of arrival
     * (the test's own timeout ends a wait that never does).
     */
    async on(topic: string, count: number) {
      const of = () => received.filter((r) => r.topic === topic);
      while (of().length < count) {
        await new Promise<void>((resolve) => {
          const done = () => {
            waiters.delete(done);
            resolve();
          };
          waiters.add(done);
        });
      }
      return of();
    },
  };
}

/**
 * An MQTT.js subscriber of every topic, with QoS 1 and a persistent session: it reconnects on its
 * own and gets what was published while it was away.
 */
export async function subscriber(url: string) {
  const { received, arrived, on } = arrivals<Received>();
  const client = await mqtt.connectAsync(url, {
    clientId: `wis2-test-${randomUUID()}`,
    clean: false,
    reconnectPeriod: 100,
  });
  client.on('message', (topic, raw, packet) => {
    arrived({ topic, raw, message: JSON.parse(raw.toString('utf8')) as Wnm, retain: packet.retain });
  });
  await client.subscribeAsync('#', { qos: 1 });
  return {
    received,
    on,
    close: () => client.endAsync(true),
  };
}

/** A publisher of the scene's database, as the server runs it, short waits between tries. */
export function publisherOf(
  scene: PortalScene,
  brokerUrl: string,
  db: Database = scene.h.db,
  given: Partial<PublisherOptions> & { publishDelayMs?: number } = {},
) {
  const { publishDelayMs = 0, ...tuning } = given;
  const options: PublisherOptions = {
    batch: 100,
    leaseMs: 60_000,
    pollMs: 50,
    firstRetryMs: 100,
    maxRetryMs: 400,
    ...tuning,
  };
  const mqttClient = mqttBroker(brokerUrl, scene.h.ports.logger, brokerUrl);
  let handedOver = 0;
  // A slow link to the broker: each message leaves this long after it was handed over.
  const broker: typeof mqttClient = {
    ...mqttClient,
    publish: async (topic, json) => {
      handedOver++;
      if (publishDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, publishDelayMs));
      return mqttClient.publish(topic, json);
    },
  };
  const publisher = startWis2Publisher(
    {
      outbox: wis2OutboxRepo(db),
      broker,
      sha512: sourceSha512(nodeSourceReader({ roots: [scene.sources, scene.uploads], hosts: [] })),
      clock: scene.h.ports.clock,
      logger: scene.h.ports.logger,
      portalOrigin: scene.url,
      newId: randomUUID,
    },
    options,
  );
  return {
    ...publisher,
    /** Messages this publisher handed to its broker connection. */
    handedOver: () => handedOver,
    async stop() {
      await publisher.stop();
      await broker.close();
    },
  };
}

export async function setOptions(db: Database, destination: string, data: string) {
  await db.update(destinations).set({ data }).where(eq(destinations.name, destination));
}

export const WIS2_ORIGIN = 'origin/a/wis2/xx-ecpds/data';

/**
 * A destination of its own for a test: `users` associated with it, an open-access user of its own
 * when named, then its wis2.topic `<WIS2_ORIGIN>/<category>/<name in lower case>` set through the API
 * as operators set it (none where `category` is null; a core topic wants its open-access user first).
 * Answers the topic.
 */
export async function wis2Destination(
  scene: PortalScene,
  name: string,
  options: { category: string | null; users?: string[]; openAccessUser?: string },
) {
  const { h, admin } = scene;
  await h.addDestination(name);
  for (const user of options.users ?? []) {
    const r = await h.call('POST', `/v1/incoming/association/add?id=${user}&destination=${name}`, { auth: admin });
    expect(r.status, r.text).toBe(200);
  }
  if (options.openAccessUser) await incomingUser(h, admin, { id: options.openAccessUser, mode: 'open-access' }, [name]);
  const topic = `${WIS2_ORIGIN}/${options.category}/${name.toLowerCase()}`;
  if (options.category !== null) {
    const query = new URLSearchParams({ destination: name, name: 'wis2.topic' });
    const r = await h.call('POST', `/v1/destination/option?${query}`, { auth: admin, form: { value: topic } });
    expect(r.status, r.text).toBe(200);
  }
  return topic;
}

/**
 * The scene of a WIS2 test file: a portal scene, Mosquitto, the test's subscriber on it (`subscribe`:
 * an MQTT.js `subscriber`, or `mosquittoSub`) and a publisher of the scene's database (`publisherOf`,
 * tuned by `publisher`). With `wakePublisher`, the movers' wake-up (a put, a delete, an expiry) wakes
 * the publisher, as the server wires them. A test may stop `publisher` and put another in its place;
 * `close` stops the one there is, then the subscriber, the broker and the portal.
 */
export async function wis2Scene<Sub extends { close(): Promise<unknown> }>(options: {
  subscribe: (brokerUrl: string) => Promise<Sub>;
  portal?: Parameters<typeof portalScene>[0];
  publisher?: Partial<PublisherOptions>;
  wakePublisher?: boolean;
}) {
  let woken: { publisher: { wake(): void } } | null = null;
  const wakeMovers = options.wakePublisher ? { wakeMovers: () => woken?.publisher.wake() } : {};
  const portal = await portalScene({ ...options.portal, ...wakeMovers });
  const started: Array<{ close(): Promise<unknown> }> = [portal];
  try {
    const broker = await startMosquitto();
    started.unshift(broker);
    const sub = await options.subscribe(broker.url);
    started.unshift(sub);
    const scene = {
      ...portal,
      broker,
      sub,
      publisher: publisherOf(portal, broker.url, portal.h.db, options.publisher),
      async close() {
        await scene.publisher.stop();
        await sub.close();
        await broker.close();
        await portal.close();
      },
    };
    woken = scene;
    return scene;
  } catch (e) {
    for (const s of started) await s.close();
    throw e;
  }
}
export type Wis2Scene<Sub extends { close(): Promise<unknown> }> = Awaited<ReturnType<typeof wis2Scene<Sub>>>;

/** An HTTPS GET of the portal (its certificate is the scene's own), with Basic credentials when given. */
export function download(href: string, credentials?: { user: string; password: string }) {
  return new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (credentials) {
      headers.authorization = `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`;
    }
    https
      .get(href, { rejectUnauthorized: false, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      })
      .on('error', reject);
  });
}

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

/** The checks of the WNM schema and core conformance class that a message of the portal must pass. */
export function expectValidMessage(r: Received, expected: { topic: string; dataId: string; rel: string }) {
  const m = r.message;
  expect(r.raw.length).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
  expect(r.retain).toBe(false);
  expect(r.topic).toBe(expected.topic);
  expect(m.id).toMatch(UUID_V4);
  expect(m.conformsTo).toEqual([WNM_CONFORMANCE]);
  expect(m.type).toBe('Feature');
  expect(m).toHaveProperty('geometry');
  expect(m.properties.data_id).toBe(expected.dataId);
  expect(m.properties.pubtime).toMatch(RFC3339);
  expect(m.properties.datetime).toMatch(RFC3339);
  expect(m.links).toHaveLength(1);
  const [link] = m.links;
  expect(link.rel).toBe(expected.rel);
  expect(link.href).toMatch(/^https:\/\//);
  expect(Number.isInteger(link.length) && link.length >= 0).toBe(true);
  expect(typeof link.type).toBe('string');
  return link;
}

/** Downloads the link as a consumer would and checks the bytes against the message's integrity and length. */
export async function expectDownloadMatches(r: Received, credentials?: { user: string; password: string }) {
  const [link] = r.message.links;
  const got = await download(link.href, credentials);
  expect(got.status).toBe(200);
  expect(got.body.length).toBe(link.length);
  expect(r.message.properties.integrity).toEqual({
    method: 'sha512',
    value: createHash('sha512').update(got.body).digest('base64'),
  });
  return got.body;
}

import { execFile } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { eq } from 'drizzle-orm';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Wnm } from '../../core/wis2/message.ts';
import { startWis2Publisher } from '../../core/wis2/publisher.ts';
import { wis2OutboxRepo } from '../../db/repositories/wis2-outbox.ts';
import { dataFiles, dataTransfers, hosts } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { mqttBroker, sourceSha512 } from '../../functions/node/wis2.ts';
import { wnmSchemaCheck } from '../../functions/node/wis2-schema.ts';
import { incomingUser, serveHttps } from '../portal/support.ts';
import { type Mosquitto, startMosquitto, subscriber } from '../portal/wis2/support.ts';
import { restoreDestination } from '../support/engine.ts';
import { type AcquisitionScene, acquisitionScene, wis2DataServer } from './support.ts';

/**
 * A destination in Global Cache mode (`wis2.globalCache`): it subscribes, as any WIS2 subscription, to a broker
 * carrying a centre's messages, keeps their data, and republishes each message on the service's own broker under
 * `cache/a/wis2/…`, its link the portal's copy. Real Mosquitto brokers, the centre's data on a local HTTP server,
 * the portal over HTTPS, and curl as the WIS2 client that downloads the cache's link.
 */
const CACHE = 'xx-ecpds-global-cache';
const DATA = 'data/core/weather/surface-based-observations/synop';
const ORIGIN = `origin/a/wis2/xx-test/${DATA}`;
let s: AcquisitionScene;
let globalBroker: Mosquitto;
let serviceBroker: Mosquitto;
let portal: Awaited<ReturnType<typeof serveHttps>>;
let republished: Awaited<ReturnType<typeof subscriber>>;
let publisher: { stop(): Promise<void> };
let served: string;
let centre: Awaited<ReturnType<typeof wis2DataServer>>;
let dataServer: string;
let hostId: number;
const schemaErrors = wnmSchemaCheck();
const sha512 = (bytes: Buffer) => createHash('sha512').update(bytes).digest('base64');

beforeAll(async () => {
  s = await acquisitionScene('wis2-gc');
  [globalBroker, serviceBroker] = await Promise.all([startMosquitto(), startMosquitto()]);
  portal = await serveHttps(s.h.app);
  centre = await wis2DataServer();
  served = centre.dir;
  dataServer = centre.url;

  // The service's publisher, as `serve` runs it with ECPDS_MQTT_URL.
  const broker = mqttBroker(serviceBroker.url, s.h.ports.logger, serviceBroker.url);
  const started = startWis2Publisher(
    {
      outbox: wis2OutboxRepo(s.h.db),
      broker,
      sha512: sourceSha512(nodeSourceReader({ roots: [], hosts: [] })),
      clock: s.h.ports.clock,
      logger: s.h.ports.logger,
      portalOrigin: portal.url,
      newId: randomUUID,
    },
    { batch: 100, leaseMs: 60_000, pollMs: 50, firstRetryMs: 100, maxRetryMs: 400 },
  );
  publisher = {
    async stop() {
      await started.stop();
      await broker.close();
    },
  };
  republished = await subscriber(serviceBroker.url);

  const nickname = 'global-cache-sub';
  await restoreDestination(
    s.h,
    s.admin,
    'GC',
    [
      {
        method: 'http',
        type: 'Acquisition',
        nickname,
        host: '127.0.0.1',
        dir: 'origin/a/wis2/xx-test/#\ncache/a/wis2/xx-test/#',
        acquisitionFrequency: 100,
        data: [
          'http.mqttMode = "yes"',
          `http.mqttUrl = "${globalBroker.url}"`,
          'http.mqttAwait = "1s"',
          'acquisition.downloadHosts = "127.0.0.1"',
          // Shorter than a Global Cache keeps data: the day the WIS2 Guide asks for wins.
          'acquisition.lifetime = "1h"',
        ].join('\n'),
      },
    ],
    { destination: { type: 0, data: `wis2.globalCache = "${CACHE}"` } },
  );
  // Its copies are public, as a Global Cache's are: the links need no login.
  await incomingUser(s.h, s.admin, { id: 'gc_public', mode: 'open-access' }, ['GC']);
  const [row] = await s.h.db.select({ id: hosts.hostid }).from(hosts).where(eq(hosts.nickname, nickname));
  hostId = row!.id;
  await s.firstRun(hostId);
}, 120_000);

afterAll(async () => {
  await republished?.close();
  await publisher?.stop();
  await s?.close();
  await portal?.close();
  await globalBroker?.close();
  await serviceBroker?.close();
  await centre?.close();
});

/** Serves a file and answers a WNM of the centre announcing it. */
function announce(name: string, bytes: Buffer, over: { rel?: string; pubtime?: Date; cache?: boolean } = {}) {
  fs.writeFileSync(path.join(served, name), bytes);
  return {
    id: randomUUID(),
    conformsTo: ['http://wis.wmo.int/spec/wnm/1/conf/core'],
    type: 'Feature',
    geometry: { type: 'Point', coordinates: [6.1, 46.2] },
    properties: {
      data_id: `xx-test/${DATA}/${name}`,
      pubtime: (over.pubtime ?? new Date()).toISOString(),
      datetime: new Date().toISOString(),
      integrity: { method: 'sha512', value: sha512(bytes) },
      ...(over.cache === false && { cache: false }),
    },
    links: [
      { href: `${dataServer}/${name}`, rel: over.rel ?? 'canonical', type: 'application/bufr', length: bytes.length },
    ],
  };
}

async function publish(message: unknown, topic = `${ORIGIN}/0-20000-0-06610`) {
  const client = await mqtt.connectAsync(globalBroker.url, { clientId: `centre-${randomUUID()}` });
  await client.publishAsync(topic, JSON.stringify(message), { qos: 1 });
  await client.endAsync();
}

/** The republication of the data `dataId` published at `pubtime`, once it is on the service's broker. */
async function republicationOf(message: ReturnType<typeof announce>) {
  return s.eventually(
    async () =>
      republished.received.find(
        (r) =>
          r.message.properties.data_id === message.properties.data_id &&
          r.message.properties.pubtime === message.properties.pubtime,
      ),
    20_000,
    `the republication of ${message.properties.data_id}`,
  );
}

/** The WIS2 client: curl downloads the link as it is, and the bytes are checked against the message's digest. */
async function downloadAsClient(message: Wnm) {
  const file = path.join(served, `client-${randomUUID()}`);
  await promisify(execFile)('curl', ['--silent', '--fail', '--insecure', '--output', file, message.links[0].href]);
  const bytes = fs.readFileSync(file);
  fs.rmSync(file);
  expect(bytes.length).toBe(message.links[0].length);
  expect(sha512(bytes)).toBe(message.properties.integrity!.value);
  return bytes;
}

const metric = (name: string) => s.metric(`${name}{centre_id="xx-test",report_by="${CACHE}"}`);

describe('a destination in Global Cache mode', () => {
  it('republishes under cache/a/wis2 a message whose data it keeps, its link the portal copy', async () => {
    const bytes = randomBytes(6000);
    const origin = announce('cached.bufr', bytes);
    await publish(origin);
    const { topic, message } = await republicationOf(origin);
    expect(topic).toBe(`cache/a/wis2/xx-test/${DATA}/0-20000-0-06610`);
    expect(schemaErrors(message)).toBeNull();
    expect(message.id).not.toBe(origin.id);
    expect(message.properties).toEqual({ ...origin.properties, 'global-cache': CACHE });
    expect(message.geometry).toEqual(origin.geometry);
    const [link] = message.links;
    expect(link.href.startsWith(`${portal.url}/portal/home/gc_public/GC/${origin.properties.data_id}?v=`)).toBe(true);
    expect(link).toMatchObject({ rel: 'canonical', type: 'application/bufr', length: bytes.length });
    expect(await downloadAsClient(message)).toEqual(bytes);
    // Downloaded from the centre once: the portal serves the cache's copy.
    expect(centre.downloads.filter((d) => d === '/cached.bufr').length).toBe(1);
  });

  it('keeps the data a day at least, whatever acquisition.lifetime says', async () => {
    const origin = announce('kept.bufr', randomBytes(100));
    await publish(origin);
    await republicationOf(origin);
    const [t] = await s.h.db.select().from(dataTransfers).where(eq(dataTransfers.target, origin.properties.data_id));
    expect(t!.expiresAt.getTime() - t!.scheduledAt.getTime()).toBeGreaterThanOrEqual(86_400_000);
  });

  it('republishes a message with cache: false as it came, a new id its only change, downloading nothing', async () => {
    const origin = announce('uncached.bufr', randomBytes(300), { cache: false });
    await publish(origin);
    const { topic, message } = await republicationOf(origin);
    expect(topic).toBe(`cache/a/wis2/xx-test/${DATA}/0-20000-0-06610`);
    expect(schemaErrors(message)).toBeNull();
    expect({ ...message, id: origin.id }).toEqual(origin);
    expect(message.id).not.toBe(origin.id);
    expect(centre.downloads).not.toContain('/uncached.bufr');
    expect(
      await s.h.db.select().from(dataTransfers).where(eq(dataTransfers.uniqueName, origin.properties.data_id)),
    ).toEqual([]);
    // Another cache's republication of it, a new id again, is not republished twice.
    await publish({ ...origin, id: randomUUID() }, `cache/a/wis2/xx-test/${DATA}/0-20000-0-06610`);
    await s.nextRun(hostId);
    await s.nextRun(hostId);
    expect(republished.received.filter((r) => r.message.properties.data_id === origin.properties.data_id).length).toBe(
      1,
    );
  });

  it("drops another cache's copy of data it has; republishes an update, its old version served on", async () => {
    const first = randomBytes(1500);
    const t0 = new Date(Date.now() - 60_000);
    const origin = announce('changing.bufr', first, { pubtime: t0 });
    await publish(origin);
    const before = (await republicationOf(origin)).message;

    const copy = { ...origin, id: randomUUID(), links: [{ ...origin.links[0]!, href: `${dataServer}/elsewhere` }] };
    await publish(copy, `cache/a/wis2/xx-test/${DATA}/0-20000-0-06610`);
    const second = randomBytes(1600);
    const update = announce('changing.bufr', second, { rel: 'http://def.wmo.int/def/rel/wnm/-/update' });
    await publish(update);
    const after = (await republicationOf(update)).message;
    expect(schemaErrors(after)).toBeNull();
    expect(after.links[0]).toMatchObject({ rel: 'http://def.wmo.int/def/rel/wnm/-/update', length: second.length });
    expect(after.links[0].href).not.toBe(before.links[0].href);
    expect(await downloadAsClient(after)).toEqual(second);
    expect(await downloadAsClient(before)).toEqual(first);
    expect(centre.downloads).not.toContain('/elsewhere');
    expect(republished.received.filter((r) => r.message.properties.data_id === origin.properties.data_id).length).toBe(
      2,
    );
  });

  it('deletes the data on a deletion and republishes it, its link the path of the copy that was', async () => {
    const origin = announce('deleted.bufr', randomBytes(700), { pubtime: new Date(Date.now() - 30_000) });
    await publish(origin);
    await republicationOf(origin);
    const deletion = announce('deleted.bufr', randomBytes(1), { rel: 'http://def.wmo.int/def/rel/wnm/-/deletion' });
    await publish(deletion);
    const { message } = await republicationOf(deletion);
    expect(schemaErrors(message)).toBeNull();
    expect(message.links[0].href).toBe(`${portal.url}/portal/home/gc_public/GC/${origin.properties.data_id}`);
    const [t] = await s.h.db.select().from(dataTransfers).where(eq(dataTransfers.target, origin.properties.data_id));
    const [file] = await s.h.db.select().from(dataFiles).where(eq(dataFiles.id, t!.dataFileId));
    expect(file!.deletedAt).not.toBeNull();
  });

  it("counts per centre in /metrics what the WMO's Global Cache metrics count", async () => {
    // A run's counts are written at its end: the earlier tests' are in once a run finished after them.
    await s.nextRun(hostId);
    const downloaded = await metric('wmo_wis2_gc_downloaded_total');
    const bytes = await metric('wmo_wis2_gc_downloaded_bytes_total');
    const errors = await metric('wmo_wis2_gc_downloaded_errors_total');
    const integrity = await metric('wmo_wis2_gc_integrity_failed_total');
    const content = randomBytes(900);
    const good = announce('counted.bufr', content);
    const bad = announce('tampered.bufr', randomBytes(900));
    bad.properties.integrity.value = sha512(randomBytes(10));
    const missing = announce('missing.bufr', randomBytes(10));
    fs.rmSync(path.join(served, 'missing.bufr'));
    for (const m of [good, bad, missing]) await publish(m);
    await republicationOf(good);
    await s.eventually(
      async () => ((await metric('wmo_wis2_gc_downloaded_errors_total')) === errors + 1 ? true : undefined),
      20_000,
      'the failed download counted',
    );
    expect(await metric('wmo_wis2_gc_downloaded_total')).toBe(downloaded + 1);
    expect(await metric('wmo_wis2_gc_downloaded_bytes_total')).toBe(bytes + content.length);
    expect(await metric('wmo_wis2_gc_integrity_failed_total')).toBe(integrity + 1);
    expect(await metric('wmo_wis2_gc_no_cache_total')).toBeGreaterThanOrEqual(1);
    expect(await metric('wmo_wis2_gc_dataserver_status_flag')).toBe(0);
    expect(await metric('wmo_wis2_gc_last_download_timestamp_seconds')).toBeGreaterThan(Date.now() / 1000 - 120);
    expect(republished.received.map((r) => r.message.properties.data_id)).not.toContain(bad.properties.data_id);
  });
});

import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataFiles, hosts } from '../../db/schema.ts';
import { type Mosquitto, startMosquitto } from '../portal/wis2/support.ts';
import { md5 } from '../retrieval/support.ts';
import { restoreDestination } from '../support/engine.ts';
import { type AcquisitionScene, acquisitionScene, wis2DataServer } from './support.ts';

/**
 * WIS2 subscriptions (an Acquisition host in the reference's `http.mqttMode`) against real Mosquitto brokers,
 * the data served by a local HTTP server: each message checked, its data downloaded and verified, then registered.
 */
const TOPIC = 'origin/a/wis2/xx-test/data/core/weather/surface-based-observations/synop';
const RECOMMENDED = 'origin/a/wis2/xx-test/data/recommended/weather';
let s: AcquisitionScene;
let brokerA: Mosquitto;
let brokerB: Mosquitto;
let served: string;
let centre: Awaited<ReturnType<typeof wis2DataServer>>;
let origin: string;

beforeAll(async () => {
  s = await acquisitionScene('wis2-sub');
  [brokerA, brokerB] = await Promise.all([startMosquitto(), startMosquitto()]);
  centre = await wis2DataServer();
  served = centre.dir;
  origin = centre.url;
});
afterAll(async () => {
  await s?.close();
  await brokerA?.close();
  await brokerB?.close();
  await centre?.close();
});

const subscriber = (name: string, broker: Mosquitto, data = '') => ({
  method: 'http' as const,
  type: 'Acquisition',
  nickname: `${name.toLowerCase()}-${broker.url.split(':').at(-1)}`,
  host: '127.0.0.1',
  // Recommended data too: it comes, and is dropped.
  dir: `${TOPIC}/${name.toLowerCase()}/#\n${RECOMMENDED}/${name.toLowerCase()}/#`,
  acquisitionFrequency: 100,
  data: [
    'http.mqttMode = "yes"',
    `http.mqttUrl = "${broker.url}"`,
    'http.mqttAwait = "1s"',
    'acquisition.downloadHosts = "127.0.0.1"',
    data,
  ].join('\n'),
});

/** A destination subscribed through the brokers given; answers its hosts' ids once each has been subscribed. */
async function subscribed(name: string, brokers: Mosquitto[], data = '') {
  const list = brokers.map((b) => subscriber(name, b, data));
  await restoreDestination(s.h, s.admin, name, list, { destination: { type: 0 } });
  const ids = [];
  for (const h of list) {
    const [row] = await s.h.db.select({ id: hosts.hostid }).from(hosts).where(eq(hosts.nickname, h.nickname));
    ids.push(row!.id);
  }
  // A session exists at the broker once a first run subscribed: what is published after it waits there.
  for (const id of ids) await s.firstRun(id);
  return ids;
}

const sha512 = (bytes: Buffer) => createHash('sha512').update(bytes).digest('base64');

/** Serves a file and answers a WNM announcing it. */
function announce(name: string, bytes: Buffer, over: { rel?: string; pubtime?: Date; dataId?: string } = {}) {
  fs.writeFileSync(path.join(served, name), bytes);
  return {
    id: randomUUID(),
    conformsTo: ['http://wis.wmo.int/spec/wnm/1/conf/core'],
    type: 'Feature',
    geometry: null,
    properties: {
      data_id: over.dataId ?? `xx-test/data/core/weather/${name}`,
      pubtime: (over.pubtime ?? new Date()).toISOString(),
      datetime: new Date().toISOString(),
      integrity: { method: 'sha512', value: sha512(bytes) },
    },
    links: [
      { href: `${origin}/${name}`, rel: over.rel ?? 'canonical', type: 'application/bufr', length: bytes.length },
    ],
  };
}

/** Publishes on the topic of the destination `name` subscribes to (its own, so that tests do not see each other's). */
async function publish(
  broker: Mosquitto,
  name: string,
  message: unknown,
  topic = `${TOPIC}/${name.toLowerCase()}/0-20000-0-00001`,
) {
  const client = await mqtt.connectAsync(broker.url, { clientId: `publisher-${randomUUID()}` });
  await client.publishAsync(topic, typeof message === 'string' ? message : JSON.stringify(message), { qos: 1 });
  await client.endAsync();
}

const fileOf = async (id: number) => (await s.h.db.select().from(dataFiles).where(eq(dataFiles.id, id)))[0]!;

/**
 * Waits until a run of the host says `text`; answers the outputs of its runs seen meanwhile, joined (messages
 * published together may be taken by two runs).
 */
async function outputSaying(hostId: number, text: string) {
  const seen = new Map<number, string>();
  return s.eventually(
    async () => {
      const run = await s.lastRun(hostId);
      if (run?.finishedAt) seen.set(run.finishedAt.getTime(), run.output);
      const all = [...seen.values()].join('\n');
      return all.includes(text) ? all : undefined;
    },
    20_000,
    `host ${hostId} saying ${text}`,
  );
}

describe('WIS2 subscriptions', () => {
  it('two brokers carry the same message: one file, its bytes verified and stored', async () => {
    const [a, b] = await subscribed('WIS_TWO', [brokerA, brokerB]);
    const bytes = randomBytes(5000);
    const message = announce('two.bufr', bytes);
    await Promise.all([publish(brokerA, 'WIS_TWO', message), publish(brokerB, 'WIS_TWO', message)]);
    const [transfer] = await s.allDone('WIS_TWO', 1);
    expect(transfer!.target).toBe('two.bufr');
    expect(transfer!.uniqueName).toBe('xx-test/data/core/weather/two.bufr');
    expect((await fileOf(transfer!.fileId)).checksum).toBe(md5(bytes));
    const outputs = [await outputSaying(a!, message.id), await outputSaying(b!, message.id)].join('\n');
    expect(outputs).toMatch(/registered DataFileId=\d+/);
    expect(outputs).toContain('dropped: message already received');
    // Verified once, stored from what was verified: one download.
    expect(centre.downloads.filter((d) => d === '/two.bufr').length).toBe(1);
  });

  it('a wrong digest or length registers nothing and is told', async () => {
    const [id] = await subscribed('WIS_BAD', [brokerA]);
    const digest = announce('bad.bufr', randomBytes(100));
    digest.properties.integrity.value = sha512(randomBytes(100));
    const length = announce('short.bufr', randomBytes(100));
    length.links[0]!.length = 99;
    await publish(brokerA, 'WIS_BAD', digest);
    await publish(brokerA, 'WIS_BAD', length);
    const output = await outputSaying(id!, length.id);
    expect(output).toContain(`(message ${digest.id}): dropped: integrity: the sha512 digest does not match`);
    expect(output).toContain(`(message ${length.id}): dropped: length 100 bytes, the link says 99`);
    expect(await s.transfersOf('WIS_BAD')).toEqual([]);
    // Counted where Prometheus reads them: from the database, whichever mover took them.
    expect(await s.metric(`ecpds_wis2_messages_total{host="${id}",outcome="unverified"}`)).toBe(2);
    expect(await s.metric(`ecpds_wis2_messages_total{host="${id}",outcome="taken"}`)).toBe(0);
  });

  it('what is published while no mover runs arrives once one starts', async () => {
    const [id] = await subscribed('WIS_LATER', [brokerA]);
    await s.stopAcquirer();
    const bytes = randomBytes(3000);
    const message = announce('later.bufr', bytes);
    await publish(brokerA, 'WIS_LATER', message);
    s.startAcquirer();
    await outputSaying(id!, message.id);
    const [transfer] = await s.allDone('WIS_LATER', 1);
    expect((await fileOf(transfer!.fileId)).checksum).toBe(md5(bytes));
  });

  it('an update replaces the file; an older resend does not; a deletion deletes it', async () => {
    const [id] = await subscribed('WIS_CHANGE', [brokerA]);
    const first = randomBytes(2000);
    const t0 = new Date(Date.now() - 60_000);
    await publish(brokerA, 'WIS_CHANGE', announce('change.bufr', first, { pubtime: t0 }));
    const [transfer] = await s.allDone('WIS_CHANGE', 1);
    expect((await fileOf(transfer!.fileId)).checksum).toBe(md5(first));

    const second = randomBytes(2100);
    const update = announce('change.bufr', second, { rel: 'http://def.wmo.int/def/rel/wnm/-/update' });
    await publish(brokerA, 'WIS_CHANGE', update);
    await outputSaying(id!, `updated DataFileId=${transfer!.fileId}`);
    await s.eventually(
      async () => ((await fileOf(transfer!.fileId)).checksum === md5(second) ? 1 : undefined),
      20_000,
      'the update stored',
    );
    const stale = announce('change.bufr', first, { pubtime: t0 });
    fs.writeFileSync(path.join(served, 'change.bufr'), first);
    await publish(brokerA, 'WIS_CHANGE', stale);
    await outputSaying(id!, `(message ${stale.id}): WIS_CHANGE: not newer than DataFileId=${transfer!.fileId}`);

    const deletion = announce('change.bufr', second, { rel: 'http://def.wmo.int/def/rel/wnm/-/deletion' });
    await publish(brokerA, 'WIS_CHANGE', deletion);
    await outputSaying(id!, `deleted DataFileId=${transfer!.fileId}`);
    expect((await fileOf(transfer!.fileId)).deletedAt).not.toBeNull();
    expect((await s.transfersOf('WIS_CHANGE')).map((t) => t.status)).toEqual(['STOP']);
  });

  it('inline content needs no download; bad messages, recommended data and unlisted hosts are dropped', async () => {
    const [id] = await subscribed('WIS_RULES', [brokerA]);
    const inline = announce('inline.txt', Buffer.from('SYNOP 12345'));
    fs.rmSync(path.join(served, 'inline.txt'));
    Object.assign(inline.properties, { content: { encoding: 'utf-8', value: 'SYNOP 12345', size: 11 } });
    await publish(brokerA, 'WIS_RULES', inline);
    await publish(brokerA, 'WIS_RULES', { hello: 'world' });
    await publish(brokerA, 'WIS_RULES', 'not json at all');
    const recommended = announce('rec.bufr', randomBytes(10));
    await publish(brokerA, 'WIS_RULES', recommended, `${RECOMMENDED}/wis_rules/x`);
    const output = await outputSaying(id!, recommended.id);
    expect(output).toMatch(new RegExp(`message ${inline.id}\\): WIS_RULES: registered DataFileId=\\d+`));
    expect(output).toContain('dropped: not a WIS2 Notification Message');
    expect(output).toContain('dropped: not JSON');
    expect(output).toContain(`(message ${recommended.id}): dropped: recommended data`);
    const [transfer] = await s.allDone('WIS_RULES', 1);
    expect((await fileOf(transfer!.fileId)).checksum).toBe(md5(Buffer.from('SYNOP 12345')));
    expect(centre.downloads).not.toContain('/inline.txt');

    const [unlisted] = await subscribed('WIS_PRIVATE', [brokerB], 'acquisition.downloadHosts = ""');
    const local = announce('local.bufr', randomBytes(10));
    await publish(brokerB, 'WIS_PRIVATE', local);
    expect(await outputSaying(unlisted!, local.id)).toMatch(/dropped: .*private address/);
    expect(await s.transfersOf('WIS_PRIVATE')).toEqual([]);
  });
});

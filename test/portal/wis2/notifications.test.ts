import fs from 'node:fs';
import path from 'node:path';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LINK_RELATIONS } from '../../../core/wis2/message.ts';
import { openPostgres } from '../../../db/client.ts';
import { wis2OutboxRepo } from '../../../db/repositories/wis2-outbox.ts';
import { dataTransfers, wis2Outbox } from '../../../db/schema.ts';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, incomingUser, putFile } from '../support.ts';
import {
  expectDownloadMatches,
  expectValidMessage,
  publisherOf,
  setOptions,
  subscriber,
  type Wis2Scene,
  wis2Destination,
  wis2Scene,
} from './support.ts';

/**
 * WIS2 notifications end to end: the portal's puts and deletes, the outbox, the publisher as the
 * server runs it, a real Mosquitto and an MQTT.js subscriber that downloads every notified file over
 * the HTTPS portal and checks its digest and length.
 */

let s: Wis2Scene<Awaited<ReturnType<typeof subscriber>>>;
const ALICE = { user: 'alice', password: 'Secret-1' };

/** A destination of its own for a test, publishing on its own topic (or none), with alice associated. */
const destination = (name: string, options: { topic?: boolean; openAccessUser?: string } = {}) =>
  wis2Destination(s, name, {
    category: options.topic === false ? null : 'recommended/weather',
    users: ['alice'],
    openAccessUser: options.openAccessUser,
  });

/** datafile/put of `bytes`, written at the source first, with more of the put's parameters. */
function put(dest: string, target: string, bytes: Buffer, query: Record<string, string> = {}) {
  fs.mkdirSync(path.dirname(sourceOf(dest, target)), { recursive: true });
  fs.writeFileSync(sourceOf(dest, target), bytes);
  const params = new URLSearchParams({ destination: dest, source: sourceOf(dest, target), target, ...query });
  return s.h.call('GET', `/v1/datafile/put?${params}`, { auth: s.admin });
}
const sourceOf = (dest: string, target: string) => `${s.sources}/${dest}/${target}`;

beforeAll(async () => {
  s = await wis2Scene({ subscribe: subscriber });
  await incomingUser(s.h, s.admin, { id: 'alice', password: ALICE.password }, []);
}, scaled(60_000));
afterAll(() => s?.close());

describe('a file of a destination with wis2.topic', needs('mosquitto'), () => {
  it('is announced as new when put, as updated when put again by force, and as deleted', async () => {
    const topic = await destination('LIFE');
    const first = await putFile(s.h, s.admin, s.sources, 'LIFE', 'obs/synop 1.bufr', bytesOf(5000, 1));
    const [created] = await s.sub.on(topic, 1);
    const link = expectValidMessage(created!, {
      topic,
      dataId: 'LIFE/obs/synop 1.bufr',
      rel: LINK_RELATIONS.new,
    });
    expect(link.href).toBe(`${s.url}/portal/data/LIFE/obs/synop%201.bufr`);
    expect(link.security?.default).toMatchObject({ type: 'http', scheme: 'basic' });
    expect(link.type).toBe('application/bufr');
    expect(created!.message.geometry).toBeNull();
    expect(await expectDownloadMatches(created!, ALICE)).toEqual(first.bytes);

    const replacement = bytesOf(7000, 2);
    // Not forced: the file is still there, nothing changes and nothing is announced.
    expect((await put('LIFE', 'obs/synop 1.bufr', replacement)).text).toMatch(/already exists/);
    const forced = await put('LIFE', 'obs/synop 1.bufr', replacement, { force: 'true' });
    expect(forced.status, forced.text).toBe(200);
    const [, updated] = await s.sub.on(topic, 2);
    expectValidMessage(updated!, { topic, dataId: 'LIFE/obs/synop 1.bufr', rel: LINK_RELATIONS.update });
    expect(await expectDownloadMatches(updated!, ALICE)).toEqual(replacement);
    expect(updated!.message.id).not.toBe(created!.message.id);

    const del = await s.h.call('DELETE', `/v1/datafile/del?id=${first.id}`, { auth: s.admin });
    expect(del.status, del.text).toBe(200);
    const [, , deleted] = await s.sub.on(topic, 3);
    expectValidMessage(deleted!, { topic, dataId: 'LIFE/obs/synop 1.bufr', rel: LINK_RELATIONS.deletion });
    expect(deleted!.message.properties.integrity).toEqual(updated!.message.properties.integrity);
    expect(deleted!.message.links[0].length).toBe(replacement.length);
  });

  it("links an open-access user's public URL, downloaded with no login, with the destination's geometry", async () => {
    const topic = await destination('OPEN', { openAccessUser: 'public_data' });
    const point = { type: 'Point', coordinates: [6.96, 50.94] };
    await setOptions(
      s.h.db,
      'OPEN',
      `wis2.topic = "${topic}"\nwis2.geometry = "${JSON.stringify(point).replace(/"/g, '\\"')}"`,
    );
    const file = await putFile(s.h, s.admin, s.sources, 'OPEN', 'radar.json', bytesOf(300, 3));
    const [message] = await s.sub.on(topic, 1);
    const link = expectValidMessage(message!, { topic, dataId: 'OPEN/radar.json', rel: 'canonical' });
    expect(link.href).toBe(`${s.url}/portal/home/public_data/OPEN/radar.json`);
    expect(link.security).toBeUndefined();
    expect(link.type).toBe('application/json');
    expect(message!.message.geometry).toEqual(point);
    expect(await expectDownloadMatches(message!)).toEqual(file.bytes);
  });

  it("gives the data's time of the put's metadata as datetime, the registration time without one", async () => {
    const topic = await destination('TIMED');
    const r = await put('TIMED', 'fc.grib2', bytesOf(100, 6), { metadata: 'date=20260301,time=06,step=12' });
    expect(r.status, r.text).toBe(200);
    await putFile(s.h, s.admin, s.sources, 'TIMED', 'plain.grib2', bytesOf(100, 7));
    const [timed, plain] = await s.sub.on(topic, 2);
    expect(timed!.message.properties.datetime).toBe('2026-03-01T06:00:00.000Z');
    expect(timed!.message.links[0].type).toBe('application/grib');
    const registered = new Date(plain!.message.properties.datetime).getTime();
    expect(Math.abs(registered - Date.now())).toBeLessThan(60_000);
  });

  it('is announced once its queue time has come, after the files put since that were due at once', async () => {
    const topic = await destination('LATER');
    const bytes = bytesOf(100, 4);
    const later = await put('LATER', 'later.bin', bytes, { at: '+2s' });
    expect(later.status, later.text).toBe(200);
    await putFile(s.h, s.admin, s.sources, 'LATER', 'now.bin', bytesOf(100, 5));
    const [first, second] = await s.sub.on(topic, 2);
    expect(first!.message.properties.data_id).toBe('LATER/now.bin');
    expect(second!.message.properties.data_id).toBe('LATER/later.bin');
    expect(await expectDownloadMatches(second!, ALICE)).toEqual(bytes);
  });

  it('is announced once released from HOLD, when others see it; a held file deleted is never told', async () => {
    const topic = await destination('HELD');
    const held = await put('HELD', 'held.bin', bytesOf(100, 8), { standby: 'true' });
    const gone = await put('HELD', 'gone.bin', bytesOf(100, 9), { standby: 'true' });
    expect([held.status, gone.status], gone.text).toEqual([200, 200]);
    await putFile(s.h, s.admin, s.sources, 'HELD', 'open.bin', bytesOf(100, 10));
    const [first] = await s.sub.on(topic, 1);
    expect(first!.message.properties.data_id).toBe('HELD/open.bin');

    const del = await s.h.call('DELETE', `/v1/datafile/del?id=${JSON.parse(gone.text).id}`, { auth: s.admin });
    expect(del.status, del.text).toBe(200);
    // An operator releases the other one.
    await s.h.db
      .update(dataTransfers)
      .set({ status: 'WAIT' })
      .where(and(eq(dataTransfers.destination, 'HELD'), eq(dataTransfers.target, 'held.bin')));
    const [, released] = await s.sub.on(topic, 2);
    expectValidMessage(released!, { topic, dataId: 'HELD/held.bin', rel: LINK_RELATIONS.new });
    expect(await expectDownloadMatches(released!, ALICE)).toEqual(bytesOf(100, 8));
    await putFile(s.h, s.admin, s.sources, 'HELD', 'last.bin', bytesOf(100, 11));
    const [, , last] = await s.sub.on(topic, 3);
    expect(last!.message.properties.data_id).toBe('HELD/last.bin');
    const rows = await s.h.db.select().from(wis2Outbox).where(eq(wis2Outbox.destination, 'HELD'));
    expect(rows.filter((r) => r.target === 'gone.bin')).toEqual([]);
  });

  it('is refused rather than cut when its message would pass 8,192 bytes', async () => {
    const topic = await destination('LONG');
    const long = `${'d'.repeat(200)}/`.repeat(20);
    await putFile(s.h, s.admin, s.sources, 'LONG', `${long}x.bin`, bytesOf(10, 6));
    await putFile(s.h, s.admin, s.sources, 'LONG', 'short.bin', bytesOf(10, 7));
    const [message] = await s.sub.on(topic, 1);
    expect(message!.message.properties.data_id).toBe('LONG/short.bin');
    const rows = await s.h.db.select().from(wis2Outbox).where(eq(wis2Outbox.destination, 'LONG'));
    expect(rows.find((r) => r.target.startsWith(long))?.outcome).toMatch(/at most 8192/);
  });
});

describe('a destination without wis2.topic', needs('mosquitto'), () => {
  it('publishes nothing', async () => {
    await destination('QUIET', { topic: false });
    const topic = await destination('LOUD');
    await putFile(s.h, s.admin, s.sources, 'QUIET', 'q.bin', bytesOf(10, 8));
    await putFile(s.h, s.admin, s.sources, 'LOUD', 'l.bin', bytesOf(10, 9));
    await s.sub.on(topic, 1);
    expect(s.sub.received.filter((r) => r.message.properties.data_id.startsWith('QUIET/'))).toEqual([]);
    expect(await s.h.db.select().from(wis2Outbox).where(eq(wis2Outbox.destination, 'QUIET'))).toEqual([]);
  });
});

describe('a broker that is down', needs('mosquitto'), () => {
  it(
    'delays the messages, which come in order once it is back, none lost, none twice',
    async () => {
      const topic = await destination('OUTAGE');
      await s.broker.stop();
      const targets = Array.from({ length: 8 }, (_, i) => `f${i}.bin`);
      for (const [i, target] of targets.entries()) {
        await putFile(s.h, s.admin, s.sources, 'OUTAGE', target, bytesOf(100 + i, 10 + i));
      }
      await s.broker.start();
      await putFile(s.h, s.admin, s.sources, 'OUTAGE', 'after.bin', bytesOf(10, 30));
      const messages = await s.sub.on(topic, targets.length + 1);
      expect(messages.map((m) => m.message.properties.data_id)).toEqual(
        [...targets, 'after.bin'].map((t) => `OUTAGE/${t}`),
      );
      expect(new Set(messages.map((m) => m.message.id)).size).toBe(messages.length);
      for (const m of messages) await expectDownloadMatches(m, ALICE);
      // One publisher keeps the order: a message sent twice would come before the next one.
      await putFile(s.h, s.admin, s.sources, 'OUTAGE', 'last.bin', bytesOf(10, 31));
      const all = await s.sub.on(topic, targets.length + 2);
      expect(all.at(-1)!.message.properties.data_id).toBe('OUTAGE/last.bin');
      expect(all).toHaveLength(targets.length + 2);
    },
    scaled(60_000),
  );
});

describe('two publishers on one database', needs('mosquitto'), () => {
  it(
    "publish each message once, and a topic's messages in order though one publisher is slow",
    async () => {
      const url = (s.h.handle as { url?: string }).url;
      const second = url ? openPostgres(url, { max: 2 }) : null;
      const topic = await destination('PAIR');
      const otherTopic = await destination('PAIR_TOO');
      // Written while no publisher runs, then taken by both at once, a few rows at a time.
      await s.publisher.stop();
      const targets = Array.from({ length: 40 }, (_, i) => `p${String(i).padStart(2, '0')}.bin`);
      for (const [i, target] of targets.entries())
        await putFile(s.h, s.admin, s.sources, 'PAIR', target, bytesOf(50, i));
      for (const [i, target] of targets.entries()) {
        await putFile(s.h, s.admin, s.sources, 'PAIR_TOO', target, bytesOf(50, 100 + i));
      }
      const slow = publisherOf(s, s.broker.url, s.h.db, { batch: 4, publishDelayMs: 40 });
      const other = publisherOf(s, s.broker.url, second?.db ?? s.h.db, { batch: 4 });
      try {
        const messages = await s.sub.on(topic, targets.length);
        const otherMessages = await s.sub.on(otherTopic, targets.length);
        // Both were running; a row is claimed by one of them only, and a topic's rows one claim after the other.
        await other.stop();
        await slow.stop();
        expect(messages.map((m) => m.message.properties.data_id)).toEqual(targets.map((t) => `PAIR/${t}`));
        expect(otherMessages.map((m) => m.message.properties.data_id)).toEqual(targets.map((t) => `PAIR_TOO/${t}`));
        expect(s.sub.received.filter((r) => r.topic === topic)).toHaveLength(targets.length);
        expect(s.sub.received.filter((r) => r.topic === otherTopic)).toHaveLength(targets.length);
        expect(slow.handedOver()).toBeGreaterThan(0);
        expect(other.handedOver()).toBeGreaterThan(0);
        expect(slow.handedOver() + other.handedOver()).toBe(2 * targets.length);
        const published = await s.h.db.select().from(wis2Outbox).where(eq(wis2Outbox.destination, 'PAIR'));
        expect(published.map((r) => r.outcome)).toEqual(targets.map(() => 'published'));
      } finally {
        await other.stop();
        await slow.stop();
        await second?.close();
        s.publisher = publisherOf(s, s.broker.url);
      }
    },
    scaled(60_000),
  );
});

describe('the outbox', needs('mosquitto'), () => {
  it('forgets the rows done before a time, and keeps those still to publish', async () => {
    const topic = await destination('PRUNED');
    const later = await put('PRUNED', 'later.bin', bytesOf(10, 120), { at: '+1h' });
    expect(later.status, later.text).toBe(200);
    await putFile(s.h, s.admin, s.sources, 'PRUNED', 'now.bin', bytesOf(10, 121));
    await s.sub.on(topic, 1);
    await s.publisher.stop(); // its row is marked published once the broker acknowledged it
    const pruned = await wis2OutboxRepo(s.h.db).prune(new Date(Date.now() + 60_000));
    expect(pruned).toBeGreaterThan(0);
    const left = await s.h.db.select().from(wis2Outbox);
    expect(left.map((r) => [r.destination, r.target, r.doneAt])).toEqual([['PRUNED', 'later.bin', null]]);
    s.publisher = publisherOf(s, s.broker.url);
  });
});

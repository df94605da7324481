import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpired } from '../../../core/data-files/handlers.ts';
import { optionLine } from '../../../core/hosts/options.ts';
import { LINK_RELATIONS } from '../../../core/wis2/message.ts';
import { WIS2_OPTIONS } from '../../../core/wis2/options.ts';
import { destinations, wis2Outbox } from '../../../db/schema.ts';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, incomingUser, putFile } from '../support.ts';
import {
  expectValidMessage,
  type Received,
  subscriber,
  type Wis2Scene,
  wis2Destination,
  wis2Scene,
} from './support.ts';

/**
 * What makes a WIS2 notice go out besides a put: a delete (API or portal) and an expiry, each
 * waking the publisher as a put does; and the options, refused where a destination's are written.
 * The publisher here never polls (10 minutes): a message that arrives was woken for.
 */

let s: Wis2Scene<Awaited<ReturnType<typeof subscriber>>>;
const ALICE = { user: 'alice', password: 'Secret-1' };

/** A destination of its own for a test, publishing on its own topic, with alice associated. */
const destination = (name: string) => wis2Destination(s, name, { category: 'recommended/weather', users: ['alice'] });

/** datafile/put of a new file with a short lifetime. */
async function putFor(dest: string, target: string, lifetime: string) {
  const source = path.join(s.sources, dest, target);
  fs.mkdirSync(path.dirname(source), { recursive: true });
  fs.writeFileSync(source, bytesOf(100, target.length));
  const query = new URLSearchParams({ destination: dest, source, target, lifetime });
  const r = await s.h.call('GET', `/v1/datafile/put?${query}`, { auth: s.admin });
  expect(r.status, r.text).toBe(200);
  return { id: r.json.id as number };
}

function portalDelete(href: string) {
  return new Promise<number>((resolve, reject) => {
    const authorization = `Basic ${Buffer.from(`${ALICE.user}:${ALICE.password}`).toString('base64')}`;
    https
      .request(href, { method: 'DELETE', rejectUnauthorized: false, headers: { authorization } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', reject)
      .end();
  });
}

const shape = (messages: Received[]) => messages.map((m) => [m.message.properties.data_id, m.message.links[0].rel]);

beforeAll(async () => {
  s = await wis2Scene({ subscribe: subscriber, publisher: { pollMs: 600_000 }, wakePublisher: true });
  await incomingUser(s.h, s.admin, { id: 'alice', password: ALICE.password, grant: ['put', 'delete'] }, []);
}, scaled(60_000));
afterAll(() => s?.close());

describe('a delete', needs('mosquitto'), () => {
  it('wakes the publisher: its deletion follows the new file at once, from the API and from the portal', async () => {
    const topic = await destination('GONE');
    const first = await putFile(s.h, s.admin, s.sources, 'GONE', 'a.bin', bytesOf(300, 1));
    await putFile(s.h, s.admin, s.sources, 'GONE', 'dir/b.bin', bytesOf(400, 2));
    await s.sub.on(topic, 2);

    const del = await s.h.call('DELETE', `/v1/datafile/del?id=${first.id}`, { auth: s.admin });
    expect(del.status, del.text).toBe(200);
    const [, , apiDeletion] = await s.sub.on(topic, 3);
    const link = expectValidMessage(apiDeletion!, { topic, dataId: 'GONE/a.bin', rel: LINK_RELATIONS.deletion });
    expect(link.length).toBe(300);

    expect(await portalDelete(`${s.url}/portal/data/GONE/dir/b.bin`)).toBe(204);
    const messages = await s.sub.on(topic, 4);
    expectValidMessage(messages[3]!, { topic, dataId: 'GONE/dir/b.bin', rel: LINK_RELATIONS.deletion });
    expect(shape(messages)).toEqual([
      ['GONE/a.bin', LINK_RELATIONS.new],
      ['GONE/dir/b.bin', LINK_RELATIONS.new],
      ['GONE/a.bin', LINK_RELATIONS.deletion],
      ['GONE/dir/b.bin', LINK_RELATIONS.deletion],
    ]);
  });
});

describe('an expiry', needs('mosquitto'), () => {
  it(
    'is announced as a deletion by the sweep, once, and not for a file deleted before',
    async () => {
      const topic = await destination('EXPIRY');
      await putFor('EXPIRY', 'old.bin', '1s');
      const deleted = await putFor('EXPIRY', 'deleted.bin', '1s');
      await putFile(s.h, s.admin, s.sources, 'EXPIRY', 'kept.bin', bytesOf(10, 3));
      await s.sub.on(topic, 3); // a file deleted before its notice went out is not announced at all
      const del = await s.h.call('DELETE', `/v1/datafile/del?id=${deleted.id}`, { auth: s.admin });
      expect(del.status, del.text).toBe(200);
      await s.sub.on(topic, 4);

      await new Promise((r) => setTimeout(r, 1100)); // both short lifetimes end
      await sweepExpired(s.h.ports);
      const [, , , , expired] = await s.sub.on(topic, 5);
      const link = expectValidMessage(expired!, { topic, dataId: 'EXPIRY/old.bin', rel: LINK_RELATIONS.deletion });
      expect(link.length).toBe(100);
      expect(expired!.message.properties.integrity?.method).toBe('sha512');

      // Swept again: nothing more to tell. A later put is the next message.
      await sweepExpired(s.h.ports);
      await putFile(s.h, s.admin, s.sources, 'EXPIRY', 'after.bin', bytesOf(10, 4));
      const messages = await s.sub.on(topic, 6);
      expect(shape(messages)).toEqual([
        ['EXPIRY/old.bin', LINK_RELATIONS.new],
        ['EXPIRY/deleted.bin', LINK_RELATIONS.new],
        ['EXPIRY/kept.bin', LINK_RELATIONS.new],
        ['EXPIRY/deleted.bin', LINK_RELATIONS.deletion],
        ['EXPIRY/old.bin', LINK_RELATIONS.deletion],
        ['EXPIRY/after.bin', LINK_RELATIONS.new],
      ]);
      const rows = await s.h.db
        .select()
        .from(wis2Outbox)
        .where(and(eq(wis2Outbox.destination, 'EXPIRY'), eq(wis2Outbox.kind, 'deletion')));
      expect(rows.map((r) => [r.target, r.outcome]).sort()).toEqual([
        ['deleted.bin', 'published'],
        ['old.bin', 'published'],
      ]);
    },
    scaled(20_000),
  );
});

/** PUT /v1/destination/backup of destinations with these options texts. */
function restore(entries: Array<[name: string, data: string]>) {
  const body = {
    backup: {
      destinations: entries.map(([name, data]) => ({
        destination: { name, countryIso: 'gb', type: 1, data },
        associations: [],
      })),
    },
  };
  return s.h.call('PUT', '/v1/destination/backup', { auth: s.admin, body });
}

describe('WIS2 options written by a restore', needs('mosquitto'), () => {
  it('are taken when valid, and the restored destination publishes on its topic', async () => {
    const topic = 'origin/a/wis2/xx-ecpds/data/recommended/weather/restored';
    const geometry = JSON.stringify({ type: 'Point', coordinates: [5.5, 51.2] });
    const data = [optionLine('wis2.geometry', geometry), 'wis2.metadataId = "urn:wmo:md:xx-ecpds:r"'];
    const r = await restore([['RESTORED', [`wis2.topic = "${topic}"`, ...data].join('\n')]]);
    expect(r.status, r.text).toBe(200);
    await s.h.call('POST', '/v1/incoming/association/add?id=alice&destination=RESTORED', { auth: s.admin });
    await putFile(s.h, s.admin, s.sources, 'RESTORED', 'r.bin', bytesOf(20, 5));
    const [message] = await s.sub.on(topic, 1);
    expectValidMessage(message!, { topic, dataId: 'RESTORED/r.bin', rel: LINK_RELATIONS.new });
    expect(message!.message.geometry).toEqual({ type: 'Point', coordinates: [5.5, 51.2] });
    expect(message!.message.properties.metadata_id).toBe('urn:wmo:md:xx-ecpds:r');
    // An empty topic is none: the destination publishes nothing, and is restored.
    expect((await restore([['SILENT', 'wis2.topic = ""']])).status).toBe(200);
  });

  it('are refused with the option and what it expects, nothing of the backup applied', async () => {
    const long = `origin/a/wis2/xx/data/core/${'x'.repeat(1100)}`;
    for (const topic of ['a/+/b', 'origin/a/wis2/#', 'a//b', '/a', 'a/', 'a/\u0001', 'a/ b', long]) {
      const r = await restore([
        ['FIRST_OK', 'wis2.topic = "origin/a/wis2/xx/data/recommended/weather/ok"'],
        ['BAD_TOPIC', optionLine('wis2.topic', topic)],
      ]);
      expect(r.status, `${topic} ${r.text}`).toBe(500);
      expect(r.json).toEqual({
        status: 'error',
        message: `Destination BAD_TOPIC: Invalid value for wis2.topic: '${topic.slice(0, 200)}' (${WIS2_OPTIONS['wis2.topic']} expected)`,
      });
    }
    const geometries = ['{', '{"type":"Point","coordinates":[1]}', '{"type":"LineString","coordinates":[[1,2],[3,4]]}'];
    for (const geometry of geometries) {
      const r = await restore([['BAD_GEOMETRY', `wis2.topic = "a/b"\n${optionLine('wis2.geometry', geometry)}`]]);
      expect(r.status).toBe(500);
      expect(r.json.message).toBe(
        `Destination BAD_GEOMETRY: Invalid value for wis2.geometry: '${geometry}' (${WIS2_OPTIONS['wis2.geometry']} expected)`,
      );
    }
    const unknown = await restore([['TYPO', 'wis2.topik = "a/b"']]);
    expect(unknown.json.message).toMatch(/^Destination TYPO: Unknown WIS2 option wis2.topik; known: wis2.topic/);
    const names = (await s.h.db.select({ name: destinations.name }).from(destinations)).map((d) => d.name);
    for (const name of ['FIRST_OK', 'BAD_TOPIC', 'BAD_GEOMETRY', 'TYPO']) expect(names).not.toContain(name);
  });
});

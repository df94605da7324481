import fs from 'node:fs';
import path from 'node:path';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpired } from '../../../core/data-files/handlers.ts';
import { LINK_RELATIONS } from '../../../core/wis2/message.ts';
import { dataTransfers, wis2Outbox } from '../../../db/schema.ts';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf } from '../support.ts';
import { expectWnm, mosquittoSub } from './mosquitto-sub.ts';
import { type Wis2Scene, wis2Destination, wis2Scene } from './support.ts';

/**
 * A file leaving the portal without a delete, as mosquitto_sub receives it (each message checked against
 * the WNM schema): an expiry, told once by the sweep; and a purge, which leaves an announced file the
 * portal still shows to its expiry rather than take it away untold. (A delete wakes the publisher:
 * lifecycle.test.ts.)
 */

let s: Wis2Scene<Awaited<ReturnType<typeof mosquittoSub>>>;
const POLL_MS = 600_000;

/** A destination with a core topic and an open-access user (its links are public). */
const destination = (name: string) =>
  wis2Destination(s, name, { category: 'core/hydrology', openAccessUser: `public_${name.toLowerCase()}` });

async function put(dest: string, target: string, lifetime = '2d') {
  const source = path.join(s.sources, dest, target);
  fs.mkdirSync(path.dirname(source), { recursive: true });
  fs.writeFileSync(source, bytesOf(100 + target.length, target.length));
  const query = new URLSearchParams({ destination: dest, source, target, lifetime });
  const r = await s.h.call('GET', `/v1/datafile/put?${query}`, { auth: s.admin });
  expect(r.status, r.text).toBe(200);
  return r.json.id as number;
}

const kinds = (topic: string) =>
  s.sub.received.filter((r) => r.topic === topic).map((r) => [r.message.properties.data_id, r.message.links[0].rel]);

beforeAll(async () => {
  s = await wis2Scene({
    subscribe: (url) => mosquittoSub(url, 'origin/a/wis2/+/data/core/#'),
    publisher: { pollMs: POLL_MS },
    wakePublisher: true,
  });
}, scaled(60_000));
afterAll(() => s?.close());

describe('an expiry', needs('mosquitto'), () => {
  it('is announced as a deletion by the sweep, once', async () => {
    const topic = await destination('EXPIRED');
    await put('EXPIRED', 'short.bufr', '1s');
    await s.sub.on(topic, 1);
    await new Promise((r) => setTimeout(r, 1100));
    await sweepExpired(s.h.ports);
    const [, deletion] = await s.sub.on(topic, 2);
    expectWnm(deletion!, { topic, dataId: 'EXPIRED/short.bufr', rel: LINK_RELATIONS.deletion });
    await sweepExpired(s.h.ports);
    await put('EXPIRED', 'next.bufr');
    await s.sub.on(topic, 3);
    expect(kinds(topic)).toEqual([
      ['EXPIRED/short.bufr', LINK_RELATIONS.new],
      ['EXPIRED/short.bufr', LINK_RELATIONS.deletion],
      ['EXPIRED/next.bufr', LINK_RELATIONS.new],
    ]);
  });
});

describe('the purge', needs('mosquitto'), () => {
  it('leaves an announced file the portal shows to its expiry, which tells its deletion', async () => {
    const topic = await destination('AGED');
    const id = await put('AGED', 'old.bufr', '2s');
    await s.sub.on(topic, 1);
    // Ended long ago by the purge's measure, yet shown until its expiry.
    const at = new Date(Date.now() - 400 * 86_400_000).toISOString();
    await s.h.db.execute(
      sql`update data_transfers set status = 'DONE', updated_at = ${at}::timestamptz where data_file_id = ${id}`,
    );
    const aged = () => s.h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, id));
    const before = new Date(Date.now() - 210 * 86_400_000);
    await s.h.ports.repos.retention.purgeAged(before, 100, s.h.ports.clock());
    expect(await aged()).toHaveLength(1);

    await new Promise((r) => setTimeout(r, 2100));
    await sweepExpired(s.h.ports);
    const [, deletion] = await s.sub.on(topic, 2);
    expectWnm(deletion!, { topic, dataId: 'AGED/old.bufr', rel: LINK_RELATIONS.deletion });
    const outbox = () => s.h.db.select().from(wis2Outbox).where(eq(wis2Outbox.destination, 'AGED'));
    while ((await outbox()).some((r) => r.doneAt === null)) await new Promise((r) => setTimeout(r, 50));
    expect(await outbox()).toHaveLength(2);
    await s.h.ports.repos.retention.purgeAged(before, 100, s.h.ports.clock());
    expect(await aged()).toHaveLength(0);
  });
});

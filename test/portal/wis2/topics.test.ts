import { createHash } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LINK_RELATIONS } from '../../../core/wis2/message.ts';
import { CORE_HOLD } from '../../../core/wis2/publisher.ts';
import { coreTopicRefusal, WTH_EXPECTED } from '../../../core/wis2/topic.ts';
import { auditLog, wis2Outbox } from '../../../db/schema.ts';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, incomingUser, putFile, tool } from '../support.ts';
import { cliOn } from './consumer-cli.ts';
import { expectWnm, mosquittoSub } from './mosquitto-sub.ts';
import { type Wis2Scene, wis2Destination, wis2Scene } from './support.ts';

/**
 * A destination's WIS2 topic as operators set it (the API's POST /v1/destination/option, the command line)
 * and as consumers meet it: Mosquitto's own mosquitto_sub receives each message, checked against WMO's WNM
 * schema, and curl downloads the file of a core data topic with no credentials.
 */

let s: Wis2Scene<Awaited<ReturnType<typeof mosquittoSub>>>;
const ORIGIN = 'origin/a/wis2/xx-ecpds/data';

const setTopic = (destination: string, value: string) =>
  s.h.call('POST', `/v1/destination/option?${new URLSearchParams({ destination, name: 'wis2.topic' })}`, {
    auth: s.admin,
    form: { value },
  });
const cli = (...argv: string[]) => cliOn(s.h.ports, ...argv);
const optionsOf = async (name: string) => (await s.h.ports.repos.destinations.get(name))?.data;

/** A destination of its own for a test, with no topic (the test sets it), alice associated. */
const destination = (name: string, openAccessUser?: string) =>
  wis2Destination(s, name, { category: null, users: ['alice'], openAccessUser });

/** curl with no credentials, as a WIS2 consumer downloads a core data link; answers the bytes. */
async function curlDownload(href: string) {
  const r = await tool('curl', ['-sSk', '--fail', href]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

beforeAll(async () => {
  // It never polls (10 minutes): a message that arrives was woken for, or is a held one looked at again.
  s = await wis2Scene({ subscribe: (url) => mosquittoSub(url), publisher: { pollMs: 600_000 }, wakePublisher: true });
  await incomingUser(s.h, s.admin, { id: 'alice', password: 'Secret-1' }, []);
}, scaled(60_000));
afterAll(() => s?.close());

describe('a core data topic', needs('mosquitto', 'curl'), () => {
  it('links to the open-access URL, which curl downloads without credentials', async () => {
    const topic = `${ORIGIN}/core/weather/open`;
    await destination('OPEN', 'public_open');
    const set = await setTopic('OPEN', topic);
    expect(set.status, set.text).toBe(200);
    const bytes = bytesOf(5000, 7);
    await putFile(s.h, s.admin, s.sources, 'OPEN', 'obs/synop.bufr', bytes);

    const [message] = await s.sub.on(topic, 1);
    const link = expectWnm(message!, { topic, dataId: 'OPEN/obs/synop.bufr', rel: LINK_RELATIONS.new });
    expect(link.href).toBe(`${s.url}/portal/home/public_open/OPEN/obs/synop.bufr`);
    expect(link).not.toHaveProperty('security');
    expect([link.type, link.length]).toEqual(['application/bufr', 5000]);
    const got = await curlDownload(link.href);
    expect(got.equals(bytes)).toBe(true);
    expect(message!.message.properties.integrity?.value).toBe(createHash('sha512').update(got).digest('base64'));
  });

  it('is refused without an open-access way, by the API, the command line and a restore', async () => {
    await destination('CLOSED');
    const topic = `${ORIGIN}/core/weather/closed`;
    const refusal = coreTopicRefusal('CLOSED', topic, [])!;
    expect(refusal).toMatch(/core data.*no active open-access incoming user/);
    const api = await setTopic('CLOSED', topic);
    expect([api.status, api.json]).toEqual([500, { status: 'error', message: refusal }]);
    const line = await cli('destination', 'option', 'CLOSED', 'wis2.topic', topic);
    expect([line.status, line.stdout, line.stderr]).toEqual([1, '', `ecpds-edge: ${refusal}\n`]);
    const restored = { name: 'CORE_RESTORED', countryIso: 'gb', type: 1, data: `wis2.topic = "${topic}"` };
    const backup = { destinations: [{ destination: restored, associations: [] }] };
    const restore = await s.h.call('PUT', '/v1/destination/backup', { auth: s.admin, body: { backup } });
    expect(restore.json.message).toBe(coreTopicRefusal('CORE_RESTORED', topic, []));
    expect(await s.h.ports.repos.destinations.exists('CORE_RESTORED')).toBe(false);
    expect(await optionsOf('CLOSED')).toBe('');

    // The topic is held to the WIS2 Topic Hierarchy when written; recommended data may take a login.
    const misspelt = `${ORIGIN}/recommended/weathr`;
    const expected = `Invalid value for wis2.topic: '${misspelt}' (${WTH_EXPECTED} expected)`;
    expect((await setTopic('CLOSED', misspelt)).json.message).toBe(expected);
    expect((await cli('destination', 'option', 'CLOSED', 'wis2.topic', misspelt)).stderr).toBe(
      `ecpds-edge: ${expected}\n`,
    );
    expect((await setTopic('CLOSED', `${ORIGIN}/recommended/weather/closed`)).status).toBe(200);
  });

  it('held when its open-access user went away: published only once one is back, never with credentials', async () => {
    const topic = `${ORIGIN}/core/ocean/held`;
    await destination('HELD', 'public_gone');
    expect((await setTopic('HELD', topic)).status).toBe(200);
    expect((await s.h.call('DELETE', '/v1/incoming/user/del/public_gone', { auth: s.admin })).status).toBe(200);
    await putFile(s.h, s.admin, s.sources, 'HELD', 'buoy.bufr', bytesOf(700, 3));
    const row = () => s.h.db.select().from(wis2Outbox).where(eq(wis2Outbox.destination, 'HELD'));
    while ((await row())[0]?.outcome !== CORE_HOLD) await new Promise((r) => setTimeout(r, 50));
    expect(s.h.logLines.some((l) => l.includes('WIS2 notification held') && l.includes('HELD'))).toBe(true);

    await incomingUser(s.h, s.admin, { id: 'public_back', mode: 'open-access' }, ['HELD']);
    // Looked at again once its hold lapses (the server's publisher also polls every second).
    const waking = setInterval(() => s.publisher.wake(), 100);
    const [message] = await s.sub.on(topic, 1).finally(() => clearInterval(waking));
    const link = expectWnm(message!, { topic, dataId: 'HELD/buoy.bufr', rel: LINK_RELATIONS.new });
    expect(link.href).toBe(`${s.url}/portal/home/public_back/HELD/buoy.bufr`);
    expect(link).not.toHaveProperty('security');
    expect((await curlDownload(link.href)).length).toBe(700);
    expect(s.sub.received.filter((r) => r.topic === topic)).toHaveLength(1);
    expect((await row())[0]).toMatchObject({ outcome: 'published' });
  });
});

describe('a topic changed', needs('mosquitto'), () => {
  it('through the API, then the command line, takes the next put', async () => {
    await destination('MOVED');
    const first = `${ORIGIN}/recommended/weather/first`;
    const second = `${ORIGIN}/recommended/climate/second`;
    expect((await setTopic('MOVED', first)).status).toBe(200);
    await putFile(s.h, s.admin, s.sources, 'MOVED', 'a.nc', bytesOf(30, 1));
    const [a] = await s.sub.on(first, 1);
    expectWnm(a!, { topic: first, dataId: 'MOVED/a.nc', rel: LINK_RELATIONS.new });

    const changed = await cli('destination', 'option', 'MOVED', 'wis2.topic', second);
    expect([changed.status, changed.stdout]).toEqual([
      0,
      `Option wis2.topic of destination 'MOVED' set to '${second}'.\n`,
    ]);
    expect((await cli('destination', 'option', 'MOVED', 'wis2.topic')).stdout).toBe(`${second}\n`);
    await putFile(s.h, s.admin, s.sources, 'MOVED', 'b.nc', bytesOf(40, 2));
    const [b] = await s.sub.on(second, 1);
    const link = expectWnm(b!, { topic: second, dataId: 'MOVED/b.nc', rel: LINK_RELATIONS.new });
    // Recommended data may take a login: the link says which.
    expect(link.security?.default.scheme).toBe('basic');
    expect(s.sub.received.filter((r) => r.topic === first)).toHaveLength(1);

    // Removed, the destination publishes nothing; each change is audited with who made it.
    expect((await cli('destination', 'option', 'MOVED', 'wis2.topic', '--unset')).stdout).toBe(
      "Option wis2.topic of destination 'MOVED' removed.\n",
    );
    expect(await optionsOf('MOVED')).toBe('');
    const audit = await s.h.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.targetKind, 'destination'), eq(auditLog.target, 'MOVED')))
      .orderBy(auditLog.id);
    expect(audit.map((r) => [r.actor, r.action, r.detail])).toEqual([
      ['api:admin', 'set destination option', `wis2.topic=${first}`],
      ['cli', 'set destination option', `wis2.topic=${second}`],
      ['cli', 'remove destination option', 'wis2.topic'],
    ]);
  });
});

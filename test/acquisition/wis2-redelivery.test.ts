import { randomUUID } from 'node:crypto';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mqttSubscriber } from '../../functions/node/wis2-subscribe.ts';
import { type Mosquitto, startMosquitto } from '../portal/wis2/support.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { scaled } from '../support/time.ts';

/**
 * A WIS2 message whose take never ended (its process died, the database failed) is not acknowledged: the broker
 * sends it again with MQTT's DUP flag, and it is taken then rather than dropped as already received.
 */
let h: Harness;
let broker: Mosquitto;
beforeAll(async () => {
  h = await createHarness();
  broker = await startMosquitto();
});
afterAll(async () => {
  await broker?.close();
  await h?.close();
});

describe('a WIS2 message taken again', () => {
  it('is the first seen again only when redelivered and its take never ended', async () => {
    const repo = h.ports.repos.acquisition;
    const id = randomUUID();
    expect(await repo.firstSeen('A', id, false)).toBe(true);
    // Another broker's copy while it is taken, or a plain resend: a duplicate.
    expect(await repo.firstSeen('A', id, false)).toBe(false);
    // The broker's redelivery of a message never acknowledged: taken again.
    expect(await repo.firstSeen('A', id, true)).toBe(true);
    await repo.tookMessage(['A'], id);
    expect(await repo.firstSeen('A', id, true)).toBe(false);
    // Each destination on its own.
    expect(await repo.firstSeen('B', id, false)).toBe(true);
  });

  it('comes again, flagged redelivered, to the next session after a take that failed', async () => {
    const session = {
      url: broker.url,
      clientId: `redelivery-${randomUUID()}`,
      username: null,
      password: null,
      clean: false,
      topics: ['origin/a/wis2/xx-test/#'],
    };
    const subscriber = mqttSubscriber();
    const window = (ms: number) => AbortSignal.timeout(ms);
    // The session at the broker, as a first run leaves it: what comes for it is kept.
    const first = await mqtt.connectAsync(broker.url, {
      clientId: session.clientId,
      clean: false,
      protocolVersion: 5,
      properties: { sessionExpiryInterval: 600 },
    });
    await first.subscribeAsync(session.topics, { qos: 1 });
    await first.endAsync();
    const publisher = await mqtt.connectAsync(broker.url, { clientId: `publisher-${randomUUID()}` });
    await publisher.publishAsync('origin/a/wis2/xx-test/data/core/x', 'payload', { qos: 1 });
    await publisher.endAsync();

    const failing = subscriber.receive(
      session,
      async () => {
        throw new Error('the database is down');
      },
      window(scaled(10_000)),
    );
    await expect(failing).rejects.toThrow('the database is down');
    const taken: Array<{ payload: string; redelivered: boolean }> = [];
    await subscriber.receive(
      session,
      async (_, payload, redelivered) => {
        taken.push({ payload: Buffer.from(payload).toString(), redelivered });
      },
      window(scaled(1500)),
    );
    expect(taken).toEqual([{ payload: 'payload', redelivered: true }]);
  });
});

import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '../../../core/ports.ts';
import { mqttBroker } from '../../../functions/node/wis2.ts';
import { type Mosquitto, startMosquitto } from './support.ts';

/** The publisher's broker connection over a long life: what each publish needed is gone once it is answered. */
const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} } as unknown as Logger;
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const heapAfterGc = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

let mosquitto: Mosquitto;
beforeAll(async () => {
  mosquitto = await startMosquitto();
});
afterAll(async () => {
  await mosquitto?.close();
});

describe('the MQTT broker of the WIS2 publisher', () => {
  it('keeps nothing of the publishes it answered while its connection lives on', async () => {
    const broker = mqttBroker(mosquitto.url, quiet, 'test');
    const publishes = async (n: number) => {
      for (let i = 0; i < n; i += 50) {
        await Promise.all(Array.from({ length: 50 }, (_, j) => broker.publish(`t/${(i + j) % 7}`, '{}')));
      }
    };
    try {
      await publishes(2_000);
      const before = heapAfterGc();
      await publishes(20_000);
      const grown = heapAfterGc() - before;
      // Before, every publish left a reaction on a promise of the connection's whole life: 20,000 kept over 8 MiB.
      expect(grown).toBeLessThan(1024 * 1024);
    } finally {
      await broker.close();
    }
  });
});

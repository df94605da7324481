import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import readline from 'node:readline';
import mqtt from 'mqtt';
import { expect } from 'vitest';
import type { Wnm } from '../../../core/wis2/message.ts';
import { wnmSchemaCheck } from '../../../functions/node/wis2-schema.ts';
import { arrivals, expectValidMessage, type Received } from './support.ts';

/**
 * Eclipse Mosquitto's own subscriber, `mosquitto_sub`, as a consumer runs it: every topic under
 * `filter` (which ends with `#`) with QoS 1, each message printed as its topic, QoS, retain flag and
 * payload in hex. It is subscribed once a probe published under the filter comes back (its output is
 * flushed after each message only).
 */
export async function mosquittoSub(brokerUrl: string, filter = '#') {
  const { hostname, port } = new URL(brokerUrl);
  const args = ['-h', hostname, '-p', port, '-t', filter, '-q', '1', '-F', 'MSG %t %q %r %x'];
  const probe = filter.replace(/\+/g, 'probe').replace(/#$/, `probe-${randomUUID()}`);
  const child = spawn('mosquitto_sub', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  // A test run that ends without close (a timed-out hook) leaves no subscriber behind.
  const orphaned = () => child.kill();
  process.once('exit', orphaned);
  const { received, arrived, on } = arrivals<Received & { qos: number }>();
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const subscribed = new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`mosquitto_sub exited (${code}): ${stderr}`)));
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      const [mark, topic, qos, retain, hex] = line.split(' ');
      if (mark !== 'MSG') return;
      if (topic === probe) return resolve();
      const raw = Buffer.from(hex ?? '', 'hex');
      arrived({
        topic: topic!,
        qos: Number(qos),
        retain: retain === '1',
        raw,
        message: JSON.parse(raw.toString('utf8')) as Wnm,
      });
    });
  });
  const prober = await mqtt.connectAsync(brokerUrl);
  const probing = setInterval(() => void prober.publishAsync(probe, '{}', { qos: 1 }).catch(() => {}), 100);
  await subscribed.finally(async () => {
    clearInterval(probing);
    await prober.endAsync();
  });
  return {
    received,
    on,
    async close() {
      process.off('exit', orphaned);
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const schemaProblem = wnmSchemaCheck();

/** The message passes WMO's WNM schema and the portal's own checks, and came with QoS 1: answers its link. */
export function expectWnm(r: Received & { qos: number }, expected: { topic: string; dataId: string; rel: string }) {
  expect(schemaProblem(r.message), JSON.stringify(r.message)).toBeNull();
  expect(r.qos).toBe(1);
  return expectValidMessage(r, expected);
}

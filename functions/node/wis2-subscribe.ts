import mqtt, { type MqttClient } from 'mqtt';
import type { SubscriptionSession, Wis2Subscriber } from '../../core/acquisition/wis2-run.ts';

const CONNECT_TIMEOUT_MS = 30_000;
/** How long a broker keeps a session and its messages while nobody is connected: the reference's 1 day. */
const SESSION_EXPIRY_SECONDS = 86_400;

/**
 * Subscribes over MQTT 5 with QoS 1 in a session the broker keeps (unless `clean`): a message is acknowledged
 * only once taken, so one received but not taken (a stop, the end of the window, a failure) comes again with
 * the next session, as do those published in between.
 */
export function mqttSubscriber(): Wis2Subscriber {
  return {
    async receive(session: SubscriptionSession, take, signal) {
      signal.throwIfAborted();
      // Connected only once `handleMessage` is set: a kept session's messages come as soon as it is accepted.
      const client = mqtt.connect(session.url, {
        clientId: session.clientId,
        clean: session.clean,
        protocolVersion: 5,
        properties: { sessionExpiryInterval: session.clean ? 0 : SESSION_EXPIRY_SECONDS },
        username: session.username ?? undefined,
        password: session.password ?? undefined,
        reconnectPeriod: 0,
        connectTimeout: CONNECT_TIMEOUT_MS,
      });
      let failure: Error | null = null;
      let closing = false;
      let taking: Promise<void> = Promise.resolve();
      let finished: () => void = () => undefined;
      const ended = new Promise<void>((resolve) => {
        finished = resolve;
      });
      const end = (error?: Error) => {
        if (error) failure ??= error;
        if (closing) return;
        closing = true;
        // What is being taken finishes and is acknowledged first; what comes after is left for the next session.
        void taking.finally(() => client.end(true, () => finished()));
      };
      signal.addEventListener('abort', () => end(), { once: true });
      client.on('error', (e) => end(e));
      client.on('close', () => end(new Error('the broker closed the connection')));
      client.handleMessage = (packet, acknowledge) => {
        if (closing) return;
        taking = take(packet.topic, new Uint8Array(packet.payload as Buffer), packet.dup).then(
          () => acknowledge(),
          (error: Error) => end(error),
        );
      };
      try {
        await connected(client);
        await client.subscribeAsync(session.topics, { qos: 1 });
      } catch (error) {
        client.end(true);
        // A take that failed while the subscription was being made closed the connection: its reason is the one.
        throw failure ?? error;
      }
      await ended;
      if (failure && !signal.aborted) throw failure;
    },
  };
}

function connected(client: MqttClient) {
  return new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
    client.once('close', () => reject(new Error('the broker closed the connection before accepting it')));
  });
}

import { createHash, randomUUID } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import { messageOf } from '../../core/common/errors.ts';
import type { SourceReader } from '../../core/dissemination/send.ts';
import type { Logger } from '../../core/ports.ts';
import type { Sha512Reader, Wis2Broker } from '../../core/wis2/ports.ts';
import {
  DEFAULT_PUBLISHER_OPTIONS,
  type PublisherOptions,
  startWis2Publisher,
  type Wis2Publisher,
} from '../../core/wis2/publisher.ts';
import { wis2OutboxRepo } from '../../db/repositories/wis2-outbox.ts';
import type { NodeConfig, Wis2Config } from './config.ts';
import { MOVERS_CHANNEL, type Runtime } from './runtime.ts';
import { nodeSourceReader } from './sources.ts';

/** How long the broker has to accept a connection, and to acknowledge a message. */
const CONNECT_TIMEOUT_MS = 5000;
const PUBACK_TIMEOUT_MS = 10_000;

/**
 * The broker over MQTT.js: one connection, opened when a message is to be sent, with QoS 1 and no
 * retain. The client never reconnects or resends on its own (the outbox does both, from the oldest
 * unacknowledged row): a connection that fails is dropped with what it had in flight, and the
 * next publish opens a new one.
 */
export function mqttBroker(url: string, logger: Logger, broker: string): Wis2Broker {
  let current: { client: MqttClient } | null = null;
  const drop = () => {
    current?.client.end(true);
    current = null;
  };
  const connection = async () => {
    if (current?.client.connected) return current;
    drop();
    const client = await mqtt.connectAsync(
      url,
      {
        reconnectPeriod: 0,
        connectTimeout: CONNECT_TIMEOUT_MS,
        clean: true,
        clientId: `ecpds-edge-${randomUUID()}`,
      },
      false,
    );
    client.on('error', (e) => logger.warn('MQTT broker error', { broker, reason: e.message }));
    // Every publish in flight listens for the close until it is answered: many at once are no leak.
    client.setMaxListeners(0);
    logger.info('connected to the MQTT broker', { broker });
    current = { client };
    return current;
  };
  return {
    async publish(topic, payload) {
      const { client } = await connection();
      let timer: NodeJS.Timeout | undefined;
      let onClose = () => {};
      // Its own listener and timer, removed once it is answered: a promise of the connection's whole life
      // raced by every publish would keep each race until the connection closes.
      const failed = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no PUBACK within ${PUBACK_TIMEOUT_MS} ms`)), PUBACK_TIMEOUT_MS);
        onClose = () => reject(new Error('the broker closed the connection'));
        client.once('close', onClose);
      });
      try {
        await Promise.race([client.publishAsync(topic, payload, { qos: 1, retain: false }), failed]);
      } catch (e) {
        if (current?.client === client) drop();
        throw e;
      } finally {
        clearTimeout(timer);
        client.off('close', onClose);
      }
    },
    async close() {
      const client = current?.client;
      current = null;
      if (client) await client.endAsync(false).catch(() => client.end(true));
    },
  };
}

/** The SHA-512 (base64) of a source read through the movers' reader, which checks its size too. */
export function sourceSha512(reader: SourceReader): Sha512Reader {
  return async (source, size) => {
    const opened = await reader.open(source, AbortSignal.timeout(10 * 60_000));
    if (opened.size !== size) throw new Error(`the source has ${opened.size} bytes, ${size} were registered`);
    const hash = createHash('sha512');
    for await (const chunk of opened.stream) hash.update(chunk);
    return hash.digest('base64');
  };
}

/**
 * The server's WIS2 publisher, on its runtime's database: woken by the puts of this process and,
 * on Postgres, by the other servers' (the movers' NOTIFY), and otherwise polling the outbox.
 * `serverUrl` is the portal's address when ECPDS_PORTAL_URL is not set.
 */
export function startNodeWis2Publisher(
  runtime: Runtime,
  config: NodeConfig & { wis2: Wis2Config },
  serverUrl: string,
  options: PublisherOptions = DEFAULT_PUBLISHER_OPTIONS,
): Wis2Publisher {
  const { ports } = runtime;
  const broker = mqttBroker(config.wis2.mqttUrl, ports.logger, config.wis2.broker);
  const publisher = startWis2Publisher(
    {
      outbox: wis2OutboxRepo(runtime.handle.db),
      broker,
      sha512: sourceSha512(nodeSourceReader({ roots: config.sourceRoots, hosts: config.sourceHosts })),
      clock: ports.clock,
      logger: ports.logger,
      portalOrigin: config.wis2.portalUrl ?? serverUrl,
      newId: randomUUID,
    },
    options,
  );
  runtime.onWake(publisher.wake);
  runtime.handle.signals
    ?.listen(MOVERS_CHANNEL, publisher.wake)
    .catch((e: unknown) => ports.logger.warn('WIS2 publisher cannot LISTEN: polling only', { reason: messageOf(e) }));
  return {
    wake: publisher.wake,
    async stop() {
      await publisher.stop();
      await broker.close();
    },
  };
}

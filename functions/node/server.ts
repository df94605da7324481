import fs from 'node:fs';
import path from 'node:path';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';
import { bootstrapWebAdmin } from '../../core/console/sign-in.ts';
import { registerDataFile } from '../../core/data-files/handlers.ts';
import type { EngineStats } from '../../core/dissemination/stats.ts';
import type { Logger, Ports } from '../../core/ports.ts';
import { sweep as sweepAndPurge } from '../../core/retention/sweep.ts';
import {
  addDemoPortalUser,
  DEMO_PORTAL_DESTINATION,
  DEMO_PORTAL_USER,
  isEmptyDatabase,
  loadDemoData,
} from '../../core/system/demo.ts';
import { VERSION } from '../../core/system/version.ts';
import { createApp } from '../http/app.ts';
import { clientAddressOf } from '../http/middleware.ts';
import { startCommandServer } from './command-server.ts';
import { ConfigError, type NodeConfig } from './config.ts';
import { listenerUrl, listenHttp } from './listener.ts';
import { batchedStdout, jsonLogger } from './logger.ts';
import { nodeUploadStore, removeStaleMultipart } from './portal-uploads.ts';
import { bootstrapAdmin, provisionProperties } from './provision.ts';
import { openRuntime } from './runtime.ts';
import { isWithin, nodeSourceReader } from './sources.ts';
import { probeRuntimeStore } from './store-probe.ts';
import { loadTls } from './tls.ts';

type Tls = Awaited<ReturnType<typeof loadTls>>;

export function nodeApp(config: NodeConfig, ports: Ports, engineStats?: EngineStats) {
  const portal = {
    serverName: config.mover.name,
    sources: nodeSourceReader({ roots: config.sourceRoots, hosts: config.sourceHosts }),
    uploads: nodeUploadStore(config.portal.uploadDir, config.portal.multipart),
  };
  const app = createApp({
    logger: ports.logger,
    trustProxy: config.trustProxy,
    maxBodyBytes: config.maxBodyBytes,
    portsFor: () => ports,
    metricsPublic: config.metricsPublic,
    engineStats: config.mover.enabled ? engineStats : undefined,
    basePath: config.basePath,
    clientAddress: (c) => clientAddressOf(c, config.trustProxy, () => peerOf(c)),
    console: { cookieSecret: ports.secrets.derive('console-cookie') },
    portal: {
      ...portal,
      s3Domain: config.portal.s3Domain,
      recheckMs: config.portal.recheckMs,
      cookieSecret: ports.secrets.derive('portal-cookie'),
      origin: config.portal.publicUrl,
      registrationLimits: config.portal.registrationLimits,
    },
  });
  return Object.assign(app, { portal });
}

/** The portal's SFTP server on its own port, next to HTTPS (not when ECPDS_PORTAL_SFTP_PORT is 0). */
async function startSftp(config: NodeConfig, ports: Ports, portal: ReturnType<typeof nodeApp>['portal']) {
  if (config.portal.sftpPort === null) return null;
  const { startPortalSftp } = await import('../portal-sftp/server.ts');
  const { loadOrCreateHostKey } = await import('../portal-sftp/host-key.ts');
  try {
    return await startPortalSftp({
      ports,
      host: config.host,
      port: config.portal.sftpPort,
      recheckMs: config.portal.recheckMs,
      hostKey: loadOrCreateHostKey(config.dataDir),
      loginTimeoutMs: config.portal.sftpLoginTimeoutMs,
      maxStartups: config.portal.sftpMaxStartups,
      ...portal,
    });
  } catch (e) {
    throw new ConfigError(
      `cannot start the portal's SFTP server on ${config.host}:${config.portal.sftpPort} ` +
        `(ECPDS_PORTAL_SFTP_PORT; 0 turns it off): ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

/**
 * The portal's S3 endpoint at the root of its own port, next to HTTPS, over TLS as HTTPS is (plain
 * HTTP behind a trusted proxy); not when ECPDS_PORTAL_S3_PORT is 0.
 */
async function startS3(config: NodeConfig, app: ReturnType<typeof nodeApp>, tls: Tls | null, logger: Logger) {
  const port = config.portal.s3Port;
  if (port === null || app.s3 === null) return null;
  try {
    const listening = await listenHttp(app.s3.fetch, config, {
      port,
      tls,
      logger,
      errorMessage: 'portal s3 server error',
    });
    return { ...listening, url: listenerUrl(listening.server, config.host, port, tls !== null) };
  } catch (e) {
    throw new ConfigError(
      `cannot start the portal's S3 listener on ${config.host}:${port} ` +
        `(ECPDS_PORTAL_S3_PORT; 0 turns it off): ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

/** The peer address Node's server saw, when the request came through it. */
function peerOf(c: Context): string | undefined {
  try {
    return getConnInfo(c).remote.address;
  } catch {
    return undefined;
  }
}

const DEMO_FILE = 'welcome.txt';

/** The demo's portal user, and a file for it in the pull-only destination (in the first source root). */
async function addDemoPortalFiles(ports: Ports, config: NodeConfig): Promise<string> {
  const password = await addDemoPortalUser(ports);
  const root = config.sourceRoots[0];
  if (root === undefined) return password;
  const source = path.join(root, 'demo', DEMO_FILE);
  fs.mkdirSync(path.dirname(source), { recursive: true });
  fs.writeFileSync(
    source,
    'Welcome to the data portal.\nThis file was registered for PORTAL_DEMO, a destination whose files stay here ' +
      'for their users to fetch.\n',
  );
  const ctx = { ports, requestId: 'demo', caller: { username: 'demo', showSensitiveInfo: false } };
  await registerDataFile(ctx, { destination: DEMO_PORTAL_DESTINATION, source, target: DEMO_FILE });
  return password;
}

/** `ecpds-edge serve`: HTTPS (or plain HTTP behind a trusted proxy) until SIGTERM/SIGINT. */
export async function runServer(config: NodeConfig) {
  const stdout = batchedStdout();
  const logger = jsonLogger(stdout.write);
  const runtime = await openRuntime(config, logger, { hold: true });
  await probeRuntimeStore(runtime);
  // The default directories for sources and `file` hosts, inside the data directory.
  for (const dir of [...config.sourceRoots, ...config.mover.fileRoots]) {
    if (isWithin(config.dataDir, dir)) fs.mkdirSync(dir, { recursive: true });
  }
  const { ports } = runtime;
  if (config.propertiesFile) await provisionProperties(ports, config.propertiesFile);
  let demoPortalPassword: string | null = null;
  if (config.demo && !config.databaseUrl && (await isEmptyDatabase(ports))) {
    await loadDemoData(ports, { deliveredDir: config.mover.fileRoots[0] });
    demoPortalPassword = await addDemoPortalFiles(ports, config);
    logger.info('demo data loaded (set ECPDS_DEMO=0 to start empty)', {});
  }

  const app = nodeApp(config, ports, runtime.engineStats);
  const tls = config.trustProxy ? null : await loadTls(config);
  const { server, dropPlainHttp } = await listenHttp(app.fetch, config, {
    port: config.port,
    tls,
    logger,
    errorMessage: 'https server error',
  }).catch(async (e: unknown) => {
    await runtime.close();
    throw new ConfigError(
      `cannot listen on ${config.host}:${config.port}: ${e instanceof Error ? e.message : String(e)}`,
    );
  });
  const sftp = await startSftp(config, ports, app.portal).catch(async (e: unknown) => {
    server.close();
    await runtime.close();
    throw e;
  });
  const s3 = await startS3(config, app, tls, logger).catch(async (e: unknown) => {
    server.close();
    await sftp?.close();
    await runtime.close();
    throw e;
  });
  // With the embedded database, `ecpds-edge incoming ...` reaches it through this server (Postgres takes them).
  const commands = config.databaseUrl ? null : await startCommandServer(runtime, logger);
  const url = listenerUrl(server, config.host, config.port, tls !== null);
  // Created once the address is bound, so a failed start cannot leave an admin whose secret was never shown.
  const bootstrapSecret = config.propertiesFile ? null : await bootstrapAdmin(ports);
  const webAdminPassword = await bootstrapWebAdmin(ports);
  // Taken from here on: whoever reads 'listening' may signal at once, before the rest has started.
  let signalled: string | null = null;
  let onSignal = (signal: string) => void (signalled ??= signal);
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  logger.info('listening', { url, version: VERSION, database: runtime.handle.kind, trustProxy: config.trustProxy });
  if (sftp) {
    logger.info('portal sftp listening', { port: sftp.port, hostKey: sftp.fingerprint });
    stdout.write(`Data portal SFTP on ${config.host}:${sftp.port}, host key ${sftp.fingerprint}\n`);
  }
  if (s3) {
    logger.info('portal s3 listening', { url: s3.url });
    stdout.write(`Data portal S3 on ${s3.url}\n`);
  }
  if (bootstrapSecret) {
    stdout.write(
      "\nBootstrap API client 'admin' created with full access. " +
        `Its secret is shown this once:\n\n    ${bootstrapSecret}\n\n` +
        `Try it:\n    curl -k -u admin:${bootstrapSecret} ${url}/v1/incoming/user/list\n\n`,
    );
  }
  if (webAdminPassword) {
    stdout.write(
      `Console administrator 'admin' created. Its password is shown this once:\n\n    ${webAdminPassword}\n\n` +
        `Log in at ${url}/console/login\n\n`,
    );
  }

  if (demoPortalPassword) {
    stdout.write(
      `Data portal user '${DEMO_PORTAL_USER}' created. Its password is shown this once:\n\n` +
        `    ${demoPortalPassword}\n\n` +
        `Log in at ${url}/portal/login, or:\n    curl -k -u ${DEMO_PORTAL_USER}:${demoPortalPassword} ` +
        `${url}/portal/data/${DEMO_PORTAL_DESTINATION}/${DEMO_FILE}\n\n`,
    );
  }

  const sweep =
    config.sweepSeconds > 0
      ? setInterval(() => {
          sweepAndPurge(ports, config.retention).catch((e: unknown) =>
            logger.error('expiry sweep failed', { reason: e instanceof Error ? e.message : String(e) }),
          );
          void removeStaleMultipart(app.portal.uploads, logger);
        }, config.sweepSeconds * 1000)
      : null;
  sweep?.unref();
  const mover = config.mover.enabled ? (await import('./mover.ts')).startNodeMover(runtime, config) : null;
  if (mover) logger.info('mover started', { mover: config.mover.name, concurrency: config.mover.concurrency });
  const wis2 = config.wis2;
  const notifier = wis2 ? (await import('./wis2.ts')).startNodeWis2Publisher(runtime, { ...config, wis2 }, url) : null;
  if (wis2) logger.info('WIS2 notifications on', { broker: wis2.broker, portal: wis2.portalUrl ?? url });
  const mails = config.mail ? (await import('./mail-sender.ts')).startNodeMailSender(runtime, config, url) : null;

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('stopping', { signal });
    if (sweep) clearInterval(sweep);
    const force = setTimeout(() => {
      server.closeAllConnections?.();
      s3?.server.closeAllConnections?.();
    }, 8000);
    force.unref();
    await Promise.all([
      ...[{ server, dropPlainHttp }, ...(s3 ? [s3] : [])].map(
        (l) =>
          new Promise<void>((resolve) => {
            l.server.close(() => resolve());
            l.server.closeIdleConnections?.();
            l.dropPlainHttp();
          }),
      ),
      sftp?.close(),
      commands?.close(),
    ]);
    await mover?.stop(config.mover.drainMs);
    await notifier?.stop();
    await mails?.stop();
    await runtime.close();
    logger.info('stopped', {});
    process.exit(0);
  };
  onSignal = (signal) => void stop(signal);
  if (signalled) onSignal(signalled);
  return { server, url, stop, sftp, s3 };
}

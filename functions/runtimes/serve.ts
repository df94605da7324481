import { drainLoop } from '../../core/common/drain-loop.ts';
import { messageOf } from '../../core/common/errors.ts';
import { VERSION } from '../../core/system/version.ts';
import { localRound } from '../edge/rounds.ts';
import { ConfigError } from '../env.ts';
import { type CallContext, keepRunning } from '../fetch-shell.ts';
import { loadTls } from '../node/tls.ts';
import { firstStart, openStandalone } from './standalone.ts';
import { startTlsFront } from './tls-front.ts';

/** A runtime's own HTTP server, as an entry gives it: the peer's address and port of each request. */
export type Listen = (options: {
  host: string;
  port: number;
  tls: { cert: string; key: string } | null;
  fetch(request: Request, peer: { address: string; port: number } | null): Promise<Response>;
}) => Promise<{ port: number; stop(): Promise<void> }>;

// As the Node server's defaults (ECPDS_HANDSHAKE_TIMEOUT_MS, ECPDS_HEADERS_TIMEOUT_MS).
const FRONT_TIMEOUTS = { handshakeMs: 10_000, headersMs: 20_000 };

/**
 * A long-lived server on a runtime's own HTTP server (Bun.serve, Deno.serve): HTTPS on PORT (TLS_CERT_FILE
 * and TLS_KEY_FILE, else a self-signed certificate kept in the data dir), where plain HTTP gets the API's
 * 403; plain HTTP behind a TLS-terminating proxy (ECPDS_TRUST_PROXY=1). The edge mover runs every
 * ECPDS_EDGE_EVERY_SECONDS, unless `schedule` takes it (Deno.cron). Stops on SIGTERM and SIGINT.
 */
export async function serveStandalone(
  env: Record<string, string | undefined>,
  listen: Listen,
  schedule?: (round: () => Promise<void>) => boolean,
) {
  // A setting the operator got wrong is said in one line, as the Node command line says it.
  const standalone = await openStandalone(env, { migrate: true }).catch((e: unknown) => {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`ecpds-edge: ${e.message}\n`);
    process.exit(1);
  });
  const { config, shell } = standalone;
  const call = (address?: string): CallContext => ({ waitUntil: keepRunning, address });
  let server: Awaited<ReturnType<Listen>>;
  let front: Awaited<ReturnType<typeof startTlsFront>> | null = null;
  if (config.ECPDS_TRUST_PROXY) {
    server = await listen({
      host: config.HOST,
      port: config.PORT,
      tls: null,
      fetch: (request, peer) => shell.fetch(request, call(peer?.address)),
    });
  } else {
    const tls = await loadTls({
      dataDir: config.ECPDS_DATA_DIR,
      tlsCertFile: config.TLS_CERT_FILE,
      tlsKeyFile: config.TLS_KEY_FILE,
    });
    server = await listen({
      host: '127.0.0.1',
      port: 0,
      tls,
      fetch: (request, peer) => shell.fetch(request, call(peer ? front?.clientOf(peer.port) : undefined)),
    });
    front = await startTlsFront({ host: config.HOST, port: config.PORT }, server.port, FRONT_TIMEOUTS);
  }
  const port = front?.port ?? server.port;
  const url = `${config.ECPDS_TRUST_PROXY ? 'http' : 'https'}://${config.HOST}:${port}`;
  await firstStart(standalone, url, (text) => process.stdout.write(text));

  const round = () => localRound(shell, standalone.sending, call());
  const scheduled = schedule?.(round) ?? false;
  // A round every ECPDS_EDGE_EVERY_SECONDS, never two at once: one that outlasts the period delays the next.
  const everyMs = config.ECPDS_EDGE_EVERY_SECONDS * 1000;
  const timer =
    !scheduled && everyMs > 0
      ? drainLoop({
          drain: async () => {
            await round();
            return 'idle';
          },
          onDrainError: (e) => shell.logger.error('edge round failed', { reason: messageOf(e) }),
          pollMs: everyMs,
          firstRetryMs: everyMs,
          maxRetryMs: everyMs,
        })
      : null;

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    shell.logger.info('stopping', { signal });
    await front?.close();
    await server.stop();
    await timer?.stop();
    await standalone.close();
    shell.logger.info('stopped', {});
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // Last, as the Node server's: whoever reads it may call with the provisioned clients, or signal, at once.
  shell.logger.info('listening', { url, version: VERSION, trustProxy: config.ECPDS_TRUST_PROXY });
  return { url, stop };
}

import type { Server } from 'node:http';
import https from 'node:https';
import { serve } from '@hono/node-server';
import type { Logger } from '../../core/ports.ts';
import type { NodeConfig } from './config.ts';
import { refusePlainHttp } from './plain-http.ts';
import { logServerErrors } from './server-errors.ts';
import { limitStartups } from './startups.ts';

/** One HTTP listener of the server: the main one (the API, console, portal) or the portal's S3 one. */
export interface Listening {
  server: Server;
  /** Closes the connections not handed to TLS (plain HTTP being refused): nothing a stop waits for. */
  dropPlainHttp(): void;
}

/**
 * Serves `fetch` on `host:port` as the main port is served: HTTPS with `tls` (plain HTTP on the port
 * answered with a 403), or plain HTTP behind a trusted proxy (`tls` null); the same deadlines for a
 * connection's handshake and headers, the same limit of connections not in yet. Rejects with the
 * listen error (a port in use, an address not on this host) rather than emitting it unhandled.
 */
export function listenHttp(
  fetch: (request: Request) => Response | Promise<Response>,
  config: Pick<NodeConfig, 'host' | 'timeouts' | 'maxStartups'>,
  listener: { port: number; tls: { cert: string; key: string } | null; logger: Logger; errorMessage: string },
): Promise<Listening> {
  const { tls } = listener;
  let dropPlainHttp = () => {};
  return new Promise<Server>((resolve, reject) => {
    const s = serve(
      {
        fetch,
        hostname: config.host,
        port: listener.port,
        serverOptions: { ...tls, ...connectionTimeouts(config.timeouts) },
        ...(tls && { createServer: https.createServer }),
      },
      () => {
        s.off('error', reject);
        logServerErrors(s, listener.logger, listener.errorMessage);
        resolve(s as Server);
      },
    );
    if (tls) dropPlainHttp = refusePlainHttp(s as https.Server, config.timeouts);
    limitStartups(s as Server, config.maxStartups);
    s.once('error', reject);
  }).then((server) => ({ server, dropPlainHttp: () => dropPlainHttp() }));
}

/**
 * Node's server options for a connection that has not sent its request yet: the TLS handshake's
 * deadline, and the headers' (checked often enough for a short one to hold: Node looks every 30 s
 * by default). A client sending a header byte now and then is closed when the deadline passes.
 */
function connectionTimeouts(timeouts: NodeConfig['timeouts']) {
  return {
    handshakeTimeout: timeouts.handshakeMs,
    headersTimeout: timeouts.headersMs,
    // Node wants the whole request's deadline beyond the headers'; its own default otherwise.
    requestTimeout: Math.max(300_000, timeouts.headersMs + 1),
    connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(timeouts.headersMs / 4))),
  };
}

/** The URL a listener is reached at (an IPv6 address in brackets). */
export function listenerUrl(server: Server, host: string, port: number, secure: boolean) {
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  return `${secure ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${bound}`;
}

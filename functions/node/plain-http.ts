import http from 'node:http';
import type https from 'node:https';
import type net from 'node:net';
import { PLAIN } from '../http/errors.ts';
import { NOT_SECURE } from '../http/middleware.ts';
import type { ConnectionTimeouts } from './config.ts';

// A TLS connection opens with a handshake record (content type 22), plain HTTP with the letters of its method.
export const TLS_HANDSHAKE = 0x16;
// How long a refused connection may stay idle once its request is read (the refusal closes it anyway).
const IDLE_MS = 60_000;

/**
 * Makes the HTTPS `server` answer plain HTTP on its port with the API's 403 for plain HTTP, where the TLS handshake
 * would fail and close the connection without a word. As nginx does, the first byte of a connection tells which
 * it is. A connection that sends nothing for `timeouts.handshakeMs`, or no whole request headers by
 * `timeouts.headersMs` after its start, is closed. Returns what closes the connections not handed to TLS, which
 * a graceful stop has no reason to wait for.
 */
export function refusePlainHttp(server: https.Server, timeouts: ConnectionTimeouts): () => void {
  const refusal = http.createServer((_req, res) => {
    res
      .writeHead(403, {
        ...PLAIN,
        'content-length': Buffer.byteLength(NOT_SECURE),
        'x-content-type-options': 'nosniff',
        connection: 'close',
      })
      .end(NOT_SECURE);
  });
  // It never listens, so Node's request timeouts do not watch its sockets: a deadline of its own for the
  // headers, which a client sending a byte now and then never reaches, then an idle timeout.
  refusal.timeout = IDLE_MS;
  const headersDeadlines = new Map<net.Socket, NodeJS.Timeout>();
  refusal.on('request', (req: http.IncomingMessage) => {
    clearTimeout(headersDeadlines.get(req.socket));
    headersDeadlines.delete(req.socket);
  });
  const notTls = new Set<net.Socket>();
  // The TLS server's own listener, which starts the handshake: from now on called only for TLS.
  const handshake = server.listeners('connection');
  server.removeAllListeners('connection');
  server.on('connection', (socket: net.Socket) => {
    notTls.add(socket);
    const drop = () => socket.destroy();
    headersDeadlines.set(socket, setTimeout(drop, timeouts.headersMs));
    socket.once('close', () => {
      notTls.delete(socket);
      clearTimeout(headersDeadlines.get(socket));
      headersDeadlines.delete(socket);
    });
    // A reset before the first byte would otherwise be an 'error' without a listener, which ends the process.
    socket.on('error', drop);
    socket.setTimeout(timeouts.handshakeMs, drop);
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      socket.unshift(chunk);
      socket.off('error', drop).off('timeout', drop).setTimeout(0);
      if (chunk[0] === TLS_HANDSHAKE) {
        notTls.delete(socket);
        // TLS has its own deadline for the handshake, and Node's HTTPS server for the headers.
        clearTimeout(headersDeadlines.get(socket));
        headersDeadlines.delete(socket);
        // TLS reads what the socket holds before reading the connection itself.
        for (const listener of handshake) Reflect.apply(listener, server, [socket]);
      } else {
        refusal.emit('connection', socket);
        // The HTTP parser reads the connection itself, and what the socket holds only once it flows again.
        socket.resume();
      }
    });
  });
  return () => {
    for (const socket of notTls) socket.destroy();
  };
}

import http from 'node:http';
import type https from 'node:https';
import type net from 'node:net';
import { PLAIN } from '../http/errors.ts';
import { NOT_SECURE } from '../http/middleware.ts';

// A TLS connection opens with a handshake record (content type 22), plain HTTP with the letters of its method.
const TLS_HANDSHAKE = 0x16;
// As long as Node's HTTP server gives a request to send its headers.
const WAIT_MS = 60_000;

/**
 * Makes the HTTPS `server` answer plain HTTP on its port with the API's 403 for plain HTTP, where the TLS handshake
 * would fail and close the connection without a word. As nginx does, the first byte of a connection tells which
 * it is. Returns what closes the connections not handed to TLS, which a graceful stop has no reason to wait for.
 */
export function refusePlainHttp(server: https.Server): () => void {
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
  // It never listens, so Node's request timeouts do not watch its sockets; an idle one is closed instead.
  refusal.timeout = WAIT_MS;
  const notTls = new Set<net.Socket>();
  // The TLS server's own listener, which starts the handshake: from now on called only for TLS.
  const handshake = server.listeners('connection');
  server.removeAllListeners('connection');
  server.on('connection', (socket: net.Socket) => {
    notTls.add(socket);
    socket.once('close', () => notTls.delete(socket));
    const drop = () => socket.destroy();
    // A reset before the first byte would otherwise be an 'error' without a listener, which ends the process.
    socket.on('error', drop);
    socket.setTimeout(WAIT_MS, drop);
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      socket.unshift(chunk);
      socket.off('error', drop).off('timeout', drop).setTimeout(0);
      if (chunk[0] === TLS_HANDSHAKE) {
        notTls.delete(socket);
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

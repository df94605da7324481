import http from 'node:http';
import type { Server } from 'node:https';
import type { Socket } from 'node:net';

// A TLS connection opens with a handshake record; anything else on the port is not TLS.
const TLS_HANDSHAKE = 0x16;

/**
 * Answers a request sent as plain HTTP to the HTTPS port with the specification's 403 instead of
 * a failed handshake (an empty reply to the client), as nginx does: the first byte of each new
 * connection decides whether it goes on to TLS or to a plain server that only answers that 403.
 */
export function refusePlainHttp(server: Server, body: string) {
  const plain = http.createServer((_request, response) => {
    response.writeHead(403, { 'content-type': 'text/plain; charset=UTF-8', connection: 'close' });
    response.end(body);
  });
  const toTls = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    socket.once('data', (first: Buffer) => {
      socket.pause();
      socket.unshift(first);
      if (first[0] === TLS_HANDSHAKE) for (const listener of toTls) listener.call(server, socket);
      else plain.emit('connection', socket);
      process.nextTick(() => socket.resume());
    });
    // A connection that closes or fails before its first byte has nothing to be told.
    socket.on('error', () => socket.destroy());
  });
}

import type http from 'node:http';
import type net from 'node:net';
import { StartupLimits } from '../../core/common/startup-limits.ts';

/**
 * Bounds the connections to `server` not in yet, in all and per address, as the portal's SFTP server
 * bounds those not logged in: a connection counts from its accept (its TLS handshake, the plain-HTTP
 * sniff, its first request's headers) until those headers are whole or it closes; one more than
 * either bound is destroyed at once, without an answer. A connection kept alive after its first
 * request no longer counts, nor does one a proxy in front keeps open. Wraps the server's 'connection'
 * listeners as they are (add any other first), running them only for the connections admitted.
 */
export function limitStartups(server: net.Server, limits: { total: number; perAddress: number }) {
  const startups = new StartupLimits(limits);
  /**
   * The connections counted, by peer: the request's socket is the TLS socket over the accepted one,
   * and both tell the same peer address and port.
   */
  const starting = new Map<string, { address: string }>();
  const release = (key: string, entry = starting.get(key)) => {
    if (entry === undefined || starting.get(key) !== entry) return;
    starting.delete(key);
    startups.release(entry.address);
  };
  const accept = server.listeners('connection');
  server.removeAllListeners('connection');
  server.on('connection', (socket: net.Socket) => {
    const address = socket.remoteAddress ?? '';
    if (!startups.admit(address)) {
      socket.destroy();
      return;
    }
    const key = peerOf(socket);
    // The same peer seen again before the close of its last connection was handled: that one is gone.
    release(key);
    const entry = { address };
    starting.set(key, entry);
    socket.once('close', () => release(key, entry));
    for (const listener of accept) Reflect.apply(listener, server, [socket]);
  });
  server.on('request', (req: http.IncomingMessage) => release(peerOf(req.socket)));
}

const peerOf = (socket: net.Socket) => `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}`;

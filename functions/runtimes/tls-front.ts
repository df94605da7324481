import net from 'node:net';
import { NOT_SECURE } from '../http/middleware.ts';
import { TLS_HANDSHAKE } from '../node/plain-http.ts';

const REFUSAL =
  'HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain; charset=UTF-8\r\nx-content-type-options: nosniff\r\n' +
  `content-length: ${new TextEncoder().encode(NOT_SECURE).length}\r\nconnection: close\r\n\r\n${NOT_SECURE}`;
// More than any request line and headers a client sends by mistake; past it the refusal goes at once.
const MAX_HEADER_BYTES = 16 * 1024;

export interface FrontTimeouts {
  /** A connection that sends nothing for this long is closed. */
  handshakeMs: number;
  /** A plain HTTP connection that has not sent whole request headers by then is closed. */
  headersMs: number;
}

export interface TlsFront {
  port: number;
  /** The client's address for a connection the TLS server took from the front, by that connection's port. */
  clientOf(frontPort: number): string | undefined;
  close(): Promise<void>;
}

/**
 * Bun's and Deno's TLS servers close a plain HTTP connection without a word. The public port is
 * this front instead: as nginx does, the first byte of a connection tells which it is; TLS is passed
 * on byte for byte to the runtime's TLS server on a loopback port, plain HTTP gets the API's 403.
 * The TLS server sees the front as its peer, so the front remembers whose each connection is.
 */
export function startTlsFront(
  listen: { host: string; port: number },
  tlsPort: number,
  timeouts: FrontTimeouts,
): Promise<TlsFront> {
  const clients = new Map<number, string>();
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    const drop = () => socket.destroy();
    socket.on('error', drop);
    socket.setTimeout(timeouts.handshakeMs, drop);
    socket.once('data', (first: Buffer) => {
      socket.setTimeout(0);
      if (first[0] === TLS_HANDSHAKE) passOn(socket, first);
      else refuse(socket, first);
    });
  });

  function passOn(socket: net.Socket, first: Buffer) {
    socket.pause();
    const inner = net.connect({ host: '127.0.0.1', port: tlsPort });
    sockets.add(inner);
    inner.once('connect', () => {
      if (inner.localPort !== undefined) clients.set(inner.localPort, socket.remoteAddress ?? 'unknown');
      inner.write(first);
      socket.pipe(inner).pipe(socket);
      socket.resume();
    });
    const end = () => {
      if (inner.localPort !== undefined) clients.delete(inner.localPort);
      sockets.delete(inner);
      inner.destroy();
      socket.destroy();
    };
    inner.once('close', end).on('error', end);
    socket.once('close', end);
  }

  function refuse(socket: net.Socket, first: Buffer) {
    let seen = first.toString('latin1');
    const deadline = setTimeout(() => socket.destroy(), timeouts.headersMs);
    const answer = () => {
      clearTimeout(deadline);
      socket.removeAllListeners('data');
      socket.end(REFUSAL);
    };
    socket.once('close', () => clearTimeout(deadline));
    if (seen.includes('\r\n\r\n') || seen.length > MAX_HEADER_BYTES) return answer();
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      if (seen.includes('\r\n\r\n') || seen.length > MAX_HEADER_BYTES) answer();
    });
  }

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      const address = server.address() as net.AddressInfo;
      resolve({
        port: address.port,
        clientOf: (frontPort) => clients.get(frontPort),
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            for (const socket of sockets) socket.destroy();
          }),
      });
    });
  });
}

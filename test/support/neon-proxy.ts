import net from 'node:net';
import { WebSocketServer } from 'ws';

/**
 * A WebSocket proxy in front of Postgres, as Neon runs one: each WebSocket carries one Postgres
 * connection's bytes, to the `address` its URL names. Started once per test process, on loopback.
 */
let started: Promise<string> | null = null;

export function neonProxy(): Promise<string> {
  started ??= new Promise((resolve, reject) => {
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    server.on('error', reject);
    server.on('listening', () => {
      const { port } = server.address() as net.AddressInfo;
      resolve(`ws://127.0.0.1:${port}/v2`);
    });
    server.on('connection', (socket, request) => {
      const address = new URL(request.url ?? '/', 'ws://proxy').searchParams.get('address') ?? '';
      const [host, port] = address.split(':');
      const upstream = net.connect({ host: host || '127.0.0.1', port: Number(port) || 5432 });
      socket.binaryType = 'nodebuffer';
      socket.on('message', (data: Buffer) => upstream.write(data));
      upstream.on('data', (chunk) => socket.send(chunk));
      const end = () => {
        upstream.destroy();
        socket.close();
      };
      socket.on('close', end).on('error', end);
      upstream.on('close', end).on('error', end);
    });
  });
  return started;
}

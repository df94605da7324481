import net from 'node:net';
import { freePort } from '../processes.ts';

/**
 * Hosts that fail at the TCP level, whatever protocol a client speaks to them, for the transfer
 * methods' and the portal servers' failure paths:
 * - `refused`: a local port nothing listens on;
 * - `unreachable`: an address of TEST-NET-1 (RFC 5737), never routed: the connect fails or hangs
 *   (a port fetch does not refuse as unsafe);
 * - `stalled`: accepts, reads and says nothing, ever;
 * - `garbage`: accepts and answers every byte with bytes of no protocol (a junk banner at once);
 * - `reset`: accepts, and resets the connection (RST) once it has received `resetAfterBytes`, or
 *   after `resetAfterMs` of silence from the client (a protocol whose server speaks first).
 */
export type HostFault = 'refused' | 'unreachable' | 'stalled' | 'garbage' | 'reset';

export const HOST_FAULTS: readonly HostFault[] = ['refused', 'unreachable', 'stalled', 'garbage', 'reset'];

export const UNREACHABLE = '192.0.2.1';

export interface FaultyHosts {
  /** `host:port` of each fault. */
  address(fault: HostFault): { hostname: string; port: number };
  /** Connections each listening fault accepted so far. */
  accepted(fault: HostFault): number;
  stop(): Promise<void>;
}

/** Bytes of no protocol: no SSH identification, FTP reply, HTTP status line or TLS record. */
export const GARBAGE = Buffer.from('\u0000\u00ff garbage \u0007\u0001\r\n\u00fe\u00fd not a banner\r\n', 'latin1');

export async function startFaultyHosts(options: { resetAfterBytes?: number; resetAfterMs?: number } = {}) {
  const resetAfterBytes = options.resetAfterBytes ?? 16 * 1024;
  const resetAfterMs = options.resetAfterMs ?? 150;
  const sockets = new Set<net.Socket>();
  const accepted = new Map<HostFault, number>();
  const behaviours: Record<'stalled' | 'garbage' | 'reset', (socket: net.Socket) => void> = {
    stalled: (socket) => socket.resume(),
    garbage: (socket) => {
      socket.write(GARBAGE);
      socket.on('data', () => socket.write(GARBAGE));
    },
    reset: (socket) => {
      let received = 0;
      let timer = setTimeout(() => socket.resetAndDestroy(), resetAfterMs);
      socket.on('data', (chunk: Buffer) => {
        received += chunk.length;
        clearTimeout(timer);
        if (received >= resetAfterBytes) return void socket.resetAndDestroy();
        timer = setTimeout(() => socket.resetAndDestroy(), resetAfterMs);
      });
      socket.on('close', () => clearTimeout(timer));
    },
  };
  const servers = new Map<HostFault, net.Server>();
  for (const [fault, behave] of Object.entries(behaviours) as Array<[HostFault, (s: net.Socket) => void]>) {
    const server = net.createServer((socket) => {
      accepted.set(fault, (accepted.get(fault) ?? 0) + 1);
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
      behave(socket);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.set(fault, server);
  }
  const refusedPort = await freePort();
  return {
    address(fault: HostFault) {
      if (fault === 'refused') return { hostname: '127.0.0.1', port: refusedPort };
      if (fault === 'unreachable') return { hostname: UNREACHABLE, port: 9999 };
      return {
        hostname: '127.0.0.1',
        port: (servers.get(fault)!.address() as net.AddressInfo).port,
      };
    },
    accepted: (fault: HostFault) => accepted.get(fault) ?? 0,
    async stop() {
      for (const socket of sockets) socket.destroy();
      await Promise.all([...servers.values()].map((s) => new Promise((resolve) => s.close(resolve))));
    },
  } satisfies FaultyHosts;
}

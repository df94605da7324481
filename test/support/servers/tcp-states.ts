import fs from 'node:fs';

/**
 * The kernel's view of the TCP connections to a local port (Linux, /proc/net/tcp and tcp6): what
 * each end has done, whatever the processes at either end have noticed yet. A connection the
 * server end still holds open is ESTABLISHED or CLOSE_WAIT (its peer closed, it has not); one
 * that the client end has closed is neither there.
 */
export interface TcpEnd {
  /** `server`: the socket on `port`; `client`: the one connected to it. */
  end: 'server' | 'client';
  state: string;
  /** The client's port: the connection as the server sees it (`req.socket.remotePort`). */
  clientPort: number;
}

const STATES: Record<string, string> = {
  '01': 'ESTABLISHED',
  '02': 'SYN_SENT',
  '03': 'SYN_RECV',
  '04': 'FIN_WAIT1',
  '05': 'FIN_WAIT2',
  '06': 'TIME_WAIT',
  '07': 'CLOSE',
  '08': 'CLOSE_WAIT',
  '09': 'LAST_ACK',
  '0A': 'LISTEN',
  '0B': 'CLOSING',
};

/** 127.0.0.1, as /proc writes it in IPv4 and as an IPv4-mapped IPv6 address. */
const LOOPBACK = /^(0100007F|0000000000000000FFFF00000100007F):/;

export function tcpEnds(port: number): TcpEnd[] {
  const ends: TcpEnd[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!fs.existsSync(file)) continue;
    for (const line of fs.readFileSync(file, 'utf8').split('\n').slice(1)) {
      const [, local, remote, code] = line.trim().split(/\s+/);
      if (!local || !remote || !code || code === '0A' || !LOOPBACK.test(local)) continue;
      const portOf = (address: string) => Number.parseInt(address.split(':')[1]!, 16);
      const state = STATES[code] ?? code;
      if (portOf(local) === port) ends.push({ end: 'server', state, clientPort: portOf(remote) });
      else if (portOf(remote) === port) ends.push({ end: 'client', state, clientPort: portOf(local) });
    }
  }
  return ends;
}

const open = (e: TcpEnd) => e.state === 'ESTABLISHED' || e.state === 'CLOSE_WAIT';

/** Connections to `port` whose server end has not closed. */
export const heldByTheServer = (port: number) => tcpEnds(port).filter((e) => e.end === 'server' && open(e));

/** Connections to `port` whose client end has not closed, all of them or those from `clientPort`. */
export const heldByTheClient = (port: number, clientPort?: number) =>
  tcpEnds(port).filter(
    (e) => e.end === 'client' && open(e) && (clientPort === undefined || e.clientPort === clientPort),
  );

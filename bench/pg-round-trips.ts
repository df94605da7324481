import net from 'node:net';

/**
 * A TCP proxy in front of Postgres that counts the round trips its clients make: each simple
 * query ('Q') and each extended-protocol sync ('S'), after which a client waits for the server's
 * ReadyForQuery. A client pointed at it (a mover's DATABASE_URL) is measured at the wire.
 */
export async function startRoundTripCounter(target: { host: string; port: number }) {
  let roundTrips = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    // Without this, Nagle's algorithm holds the proxy's small writes back: a wait no client has alone.
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    sockets.add(client).add(upstream);
    let pending: Buffer = Buffer.alloc(0);
    let startup = true;
    client.on('data', (data: Buffer) => {
      pending = pending.length === 0 ? data : Buffer.concat([pending, data]);
      for (;;) {
        // Startup and SSL requests carry no type byte: a length, then the payload.
        const header = startup ? 4 : 5;
        if (pending.length < header) break;
        const length = startup ? pending.readInt32BE(0) : pending.readInt32BE(1) + 1;
        if (pending.length < length) break;
        if (startup) {
          const sslRequest = length === 8 && pending.readInt32BE(4) === 80877103;
          startup = sslRequest;
        } else if (pending[0] === 0x51 || pending[0] === 0x53) {
          roundTrips++;
        }
        pending = pending.subarray(length);
      }
      upstream.write(data);
    });
    upstream.on('data', (data) => client.write(data));
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    roundTrips: () => roundTrips,
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

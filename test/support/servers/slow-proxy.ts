import net from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 that paces what the client sends (a slow link), and can stop passing
 * bytes on while keeping both connections open (a stalled link).
 */
export interface SlowProxy {
  port: number;
  /** Bytes per second from the client to the server; Infinity passes them at once. */
  rate: number;
  /** Once this many bytes went through in total, nothing more does (the connections stay open). */
  stallAfterBytes: number;
  /** Bytes passed to the server so far. */
  passed(): number;
  stop(): Promise<void>;
}

export async function startSlowProxy(target: number, rate = Number.POSITIVE_INFINITY): Promise<SlowProxy> {
  const sockets = new Set<net.Socket>();
  let passed = 0;
  const proxy: SlowProxy = {
    port: 0,
    rate,
    stallAfterBytes: Number.POSITIVE_INFINITY,
    passed: () => passed,
    stop: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.pipe(client);
    // Paced in slices of at most 1/20 s worth, so a large chunk does not pass in one burst.
    const queue: Buffer[] = [];
    let pumping = false;
    const pump = async () => {
      if (pumping) return;
      pumping = true;
      while (queue.length > 0 && !upstream.destroyed) {
        if (passed >= proxy.stallAfterBytes) {
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        const slice = Number.isFinite(proxy.rate) ? Math.max(1, Math.floor(proxy.rate / 20)) : Number.MAX_SAFE_INTEGER;
        const room = Math.min(slice, proxy.stallAfterBytes - passed);
        const head = queue[0]!;
        const part = head.subarray(0, room);
        if (part.length === head.length) queue.shift();
        else queue[0] = head.subarray(part.length);
        passed += part.length;
        upstream.write(part);
        if (Number.isFinite(proxy.rate)) await new Promise((r) => setTimeout(r, (part.length / proxy.rate) * 1000));
      }
      pumping = false;
      if (queue.length === 0) client.resume();
    };
    client.on('data', (chunk: Buffer) => {
      queue.push(chunk);
      if (queue.length > 16) client.pause();
      void pump();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.port = (server.address() as net.AddressInfo).port;
  return proxy;
}

import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/**
 * An HTTP server on 127.0.0.1 that serves the files of a directory at a paced rate per response:
 * a slow source, so that a send is still in flight when a test pauses or kills its mover.
 */
export interface SlowSource {
  /** `127.0.0.1:<port>`, as ECPDS_SOURCE_HOSTS lists it. */
  host: string;
  /** The URL a data file registers for `name` in the directory. */
  url(name: string): string;
  /** Bytes per second of each response; read when a response sends its next slice. */
  rate: number;
  /** Bytes of file content sent so far, over all responses. */
  served(): number;
  stop(): Promise<void>;
}

const SLICES_PER_SECOND = 20;

export async function startSlowSource(directory: string, rate: number): Promise<SlowSource> {
  let served = 0;
  const server = http.createServer((req, res) => {
    const file = path.join(directory, path.basename(new URL(req.url ?? '/', 'http://x').pathname));
    if (!fs.existsSync(file)) return void res.writeHead(404).end();
    const content = fs.readFileSync(file);
    res.writeHead(200, { 'content-length': content.byteLength });
    if (req.method === 'HEAD') return void res.end();
    let at = 0;
    const next = () => {
      if (res.destroyed) return;
      if (at >= content.byteLength) return void res.end();
      const slice = Math.max(1, Math.floor(source.rate / SLICES_PER_SECOND));
      const part = content.subarray(at, at + slice);
      at += part.byteLength;
      served += part.byteLength;
      res.write(part);
      setTimeout(next, 1000 / SLICES_PER_SECOND);
    };
    next();
  });
  server.on('connection', (socket) => socket.on('error', () => undefined));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const source: SlowSource = {
    host,
    url: (name) => `http://${host}/${encodeURIComponent(name)}`,
    rate,
    served: () => served,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return source;
}

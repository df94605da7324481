import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';

/**
 * A web server that stores PUT and POST bodies under a temporary directory: written to a
 * temporary file, renamed into place only once the body arrived whole (so an interrupted upload
 * leaves nothing). Optional Basic auth; every request is recorded; `respond` injects answers.
 */
export interface SinkRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  bytes: number;
  incomplete: boolean;
}

export interface HttpSink {
  url: string;
  port: number;
  dir: string;
  requests: SinkRequest[];
  /** Answer instead of storing: a status and body, or 'stall' to never answer. */
  respond: (
    req: http.IncomingMessage,
  ) => { status: number; body: string; headers?: Record<string, string> } | 'stall' | undefined;
  file(relative: string): Buffer | null;
  stop(): Promise<void>;
}

export async function startHttpSink(
  options: { auth?: { user: string; password: string }; tls?: { key: string; cert: string } } = {},
): Promise<HttpSink> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-http-'));
  const store = path.join(dir, 'store');
  fs.mkdirSync(store);
  let temps = 0;
  const sockets = new Set<Socket>();
  const expected = options.auth
    ? `Basic ${Buffer.from(`${options.auth.user}:${options.auth.password}`).toString('base64')}`
    : null;

  const sink: HttpSink = {
    url: '',
    port: 0,
    dir: store,
    requests: [],
    respond: () => undefined,
    file(relative) {
      const full = path.join(store, relative);
      return fs.existsSync(full) ? fs.readFileSync(full) : null;
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const record: SinkRequest = {
      method: req.method!,
      url: req.url!,
      headers: req.headers,
      bytes: 0,
      incomplete: false,
    };
    sink.requests.push(record);
    const injected = sink.respond(req);
    if (injected === 'stall') return;
    if (expected && req.headers.authorization !== expected) {
      req.resume();
      res.writeHead(401, { 'www-authenticate': 'Basic realm="sink"' }).end('Authorization required');
      return;
    }
    if (injected) {
      req.resume();
      res.writeHead(injected.status, injected.headers).end(injected.body);
      return;
    }
    if (req.method !== 'PUT' && req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const target = path.join(store, decodeURIComponent(new URL(req.url!, 'http://x').pathname));
    if (!target.startsWith(`${store}${path.sep}`)) {
      res.writeHead(403).end('outside');
      return;
    }
    const temp = path.join(dir, `upload-${++temps}`);
    try {
      req.on('data', (c: Buffer) => {
        record.bytes += c.length;
      });
      await pipeline(req, fs.createWriteStream(temp));
      if (record.bytes !== Number(req.headers['content-length'] ?? record.bytes)) throw new Error('short body');
    } catch {
      record.incomplete = true;
      fs.rmSync(temp, { force: true });
      res.destroy();
      return;
    }
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.renameSync(temp, target);
    res.writeHead(201).end();
  }

  const listener = (req: http.IncomingMessage, res: http.ServerResponse) => {
    handle(req, res).catch(() => res.destroy());
  };
  const server = options.tls ? https.createServer(options.tls, listener) : http.createServer(listener);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  sink.port = (server.address() as AddressInfo).port;
  sink.url = `${options.tls ? 'https' : 'http'}://127.0.0.1:${sink.port}`;
  return sink;
}

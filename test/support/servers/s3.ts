import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import S3rver from 's3rver';
import { checkSignature } from './sigv4.ts';

/**
 * s3rver in process, behind a small front that makes it behave like S3 where the tests need it:
 * - SigV4 signatures are checked (s3rver accepts any V4 signature);
 * - a PUT or POST body reaches s3rver only once it arrived whole (s3rver writes an object as it
 *   streams in, so an interrupted PUT would leave a partial object where S3 leaves none);
 * - AbortMultipartUpload works (s3rver answers 405) and parts under 5 MiB but the last are
 *   refused with EntityTooSmall on completion (s3rver takes any size);
 * - DeleteObjects deletes one key after the other (s3rver deletes them all at once, and two keys
 *   of one directory then race to remove it: a 500) and requires Content-MD5, as AWS does;
 * - ListObjectsV2 pages with continuation tokens (s3rver's need a cipher OpenSSL 3 lacks);
 * - faults can be injected per request (a 500, no answer at all, or a wrong ETag);
 * - the most UploadPart requests in progress at once is kept.
 */
export type S3Fault = 'fail500' | 'stall' | 'wrongEtag' | undefined;

export interface S3Request {
  method: string;
  url: string;
  host: string;
  /** The body did not arrive whole (the client gave up or broke it off). */
  incomplete: boolean;
}

export interface S3TestServer {
  url: string;
  /** s3rver itself, without the front (for measurements). */
  directUrl: string;
  /** The front's port, for a fetch that reaches virtual-hosted names (`<bucket>.s3.localhost`). */
  port: number;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  dir: string;
  requests: S3Request[];
  /** The most UploadPart requests in progress at once. */
  maxPartsInFlight: number;
  /** Upload ids aborted with AbortMultipartUpload. */
  aborted: string[];
  fault: (req: http.IncomingMessage) => S3Fault;
  /** The object's bytes, or null when there is none. */
  object(key: string, bucket?: string): Promise<Buffer | null>;
  /** Multipart uploads neither completed nor aborted. */
  pendingUploads(bucket?: string): string[];
  /** Closes the port (connections refused, those open cut), keeping the objects, until `up`. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  stop(): Promise<void>;
}

/** A dissemination host on the server's bucket, path style, delivering under `dir`. */
export const s3TestHost = (s3: S3TestServer, dir: string) => ({
  method: 's3' as const,
  host: new URL(s3.url).host,
  login: s3.accessKeyId,
  passwd: s3.secretAccessKey,
  dir,
  data: `s3.bucketName = "${s3.bucket}"\ns3.url = "${s3.url}"\ns3.enablePathStyleAccess = "yes"`,
});

const MIN_PART = 5 * 1024 * 1024;
const ACCESS_KEY = 'S3RVER';

export async function startS3(bucket = 'test-bucket', port = 0): Promise<S3TestServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-s3-'));
  const store = path.join(dir, 'store');
  const spool = path.join(dir, 'spool');
  fs.mkdirSync(spool, { recursive: true });
  const s3rver = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: store,
    // `<bucket>.s3.localhost` is then read as virtual-hosted style.
    serviceEndpoint: 'localhost',
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  const { port: backPort } = await s3rver.run();
  const secrets = new Map([[ACCESS_KEY, ACCESS_KEY]]);
  const uploadsDir = (b: string) => path.join(store, b, '._S3rver_uploads');
  let spooled = 0;
  let partsInFlight = 0;
  const sockets = new Set<Socket>();
  // Requests of an upload in progress (from their first byte, body included), by upload id: an
  // abort waits for them rather than removing the upload under a part s3rver is still writing,
  // or before a part that had fully arrived is passed on (which would bring the upload back).
  const passing = new Map<string, Set<Promise<void>>>();

  const server: S3TestServer = {
    url: '',
    directUrl: `http://127.0.0.1:${backPort}`,
    port: 0,
    bucket,
    accessKeyId: ACCESS_KEY,
    secretAccessKey: ACCESS_KEY,
    dir,
    requests: [],
    aborted: [],
    maxPartsInFlight: 0,
    fault: () => undefined,
    async object(key, b = bucket) {
      const res = await fetch(`${server.directUrl}/${b}/${key.split('/').map(encodeURIComponent).join('/')}`);
      if (res.status === 200) return Buffer.from(await res.arrayBuffer());
      await res.body?.cancel();
      return null;
    },
    pendingUploads: (b = bucket) => (fs.existsSync(uploadsDir(b)) ? fs.readdirSync(uploadsDir(b)) : []),
    async down() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => front.close(r));
    },
    async up() {
      await new Promise<void>((r) => front.listen(server.port, '127.0.0.1', r));
    },
    async stop() {
      for (const s of sockets) s.destroy();
      if (front.listening) await new Promise((r) => front.close(r));
      s3rver.httpServer?.closeAllConnections();
      await s3rver.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };

  const reply = (res: http.ServerResponse, status: number, code: string, message: string) => {
    res.writeHead(status, { 'content-type': 'application/xml' });
    res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`);
  };

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const record: S3Request = { method: req.method!, url: req.url!, host: req.headers.host!, incomplete: false };
    server.requests.push(record);
    const query = new URL(req.url!, 'http://x').searchParams;
    const signature = checkSignature(req, secrets);
    const fault = server.fault(req);
    if (fault === 'stall') return;
    const isPart = query.has('partNumber');
    if (isPart) server.maxPartsInFlight = Math.max(server.maxPartsInFlight, ++partsInFlight);
    res.on('close', () => {
      if (isPart) partsInFlight--;
    });

    // The body first, whole, as S3 takes it.
    let body: string | null = null;
    if (req.method === 'PUT' || req.method === 'POST') {
      body = path.join(spool, String(++spooled));
      const expected = Number(req.headers['content-length'] ?? Number.NaN);
      try {
        await pipeline(req, fs.createWriteStream(body));
      } catch {
        record.incomplete = true;
      }
      if (!record.incomplete && Number.isFinite(expected) && fs.statSync(body).size !== expected) {
        record.incomplete = true;
      }
      if (record.incomplete) {
        fs.rmSync(body, { force: true });
        return void res.destroy();
      }
    }
    try {
      if (signature === 'mismatch') {
        return reply(res, 403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match');
      }
      if (fault === 'fail500') return reply(res, 500, 'InternalError', 'We encountered an internal error');
      const b = req.headers.host?.match(/^(.+)\.s3\.localhost(:\d+)?$/)?.[1] ?? req.url!.split(/[/?]/)[1]!;
      const uploadId = query.get('uploadId');
      if (uploadId && req.method === 'DELETE') {
        await Promise.allSettled(passing.get(uploadId) ?? []);
        fs.rmSync(path.join(uploadsDir(b), path.basename(uploadId)), { recursive: true, force: true });
        server.aborted.push(uploadId);
        res.writeHead(204).end();
        return;
      }
      if (uploadId && req.method === 'POST' && tooSmallPart(path.join(uploadsDir(b), path.basename(uploadId)))) {
        return reply(res, 400, 'EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed size');
      }
      if (req.method === 'POST' && query.has('delete') && body) return await deleteObjects(req, res, b, body);
      if (req.method === 'GET' && query.get('list-type') === '2') return await listObjectsV2(res, b, query);
      await forward(req, res, body, fault === 'wrongEtag');
    } finally {
      if (body) fs.rmSync(body, { force: true });
    }
  }

  async function forward(req: http.IncomingMessage, res: http.ServerResponse, body: string | null, badEtag: boolean) {
    await new Promise<void>((resolve, reject) => {
      const back = http.request(
        { host: '127.0.0.1', port: backPort, method: req.method, path: req.url, headers: req.headers, agent: false },
        (answer) => {
          const headers = badEtag ? { ...answer.headers, etag: '"0123456789abcdef0123456789abcdef"' } : answer.headers;
          res.writeHead(answer.statusCode!, headers);
          pipeline(answer, res).then(resolve, reject);
        },
      );
      back.on('error', reject);
      if (body) pipeline(fs.createReadStream(body), back).catch(reject);
      else back.end();
    });
  }

  /** DeleteObjects as S3 takes it (Content-MD5 required), one DeleteObject at a time behind it. */
  async function deleteObjects(req: http.IncomingMessage, res: http.ServerResponse, b: string, body: string) {
    const xml = fs.readFileSync(body);
    const md5 = createHash('md5').update(xml).digest('base64');
    if (req.headers['content-md5'] !== md5) {
      return reply(res, 400, 'InvalidRequest', 'Missing or wrong Content-MD5 for DeleteObjects');
    }
    const keys = [...xml.toString().matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => unescapeXml(m[1]!));
    for (const key of keys) {
      const answer = await fetch(`${server.directUrl}/${b}/${key.split('/').map(encodeURIComponent).join('/')}`, {
        method: 'DELETE',
      });
      await answer.body?.cancel();
    }
    res.writeHead(200, { 'content-type': 'application/xml' });
    res.end('<?xml version="1.0" encoding="UTF-8"?><DeleteResult></DeleteResult>');
  }

  /**
   * ListObjectsV2 as a V1 listing behind it: s3rver's continuation tokens use a cipher OpenSSL 3
   * no longer has (a 500 on every truncated page). The token here is the last key, in base64url.
   */
  async function listObjectsV2(res: http.ServerResponse, b: string, query: URLSearchParams) {
    const v1 = new URLSearchParams();
    for (const name of ['prefix', 'max-keys', 'delimiter']) if (query.has(name)) v1.set(name, query.get(name)!);
    const token = query.get('continuation-token');
    const after = token === null ? query.get('start-after') : Buffer.from(token, 'base64url').toString();
    if (after) v1.set('marker', after);
    const answer = await fetch(`${server.directUrl}/${b}?${v1}`);
    const xml = await answer.text();
    if (!answer.ok) {
      res.writeHead(answer.status, { 'content-type': 'application/xml' });
      return void res.end(xml);
    }
    const keys = [...xml.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => unescapeXml(m[1]!));
    const truncated = /<IsTruncated>true<\/IsTruncated>/.test(xml) && keys.length > 0;
    const next = truncated
      ? `<NextContinuationToken>${Buffer.from(keys.at(-1)!).toString('base64url')}</NextContinuationToken>`
      : '';
    res.writeHead(200, { 'content-type': 'application/xml' });
    res.end(xml.replace(/<Marker>[^<]*<\/Marker>/, `<KeyCount>${keys.length}</KeyCount>${next}`));
  }

  const front = http.createServer((req, res) => {
    const handling = handle(req, res).catch(() => void res.destroy());
    const uploadId = new URL(req.url!, 'http://x').searchParams.get('uploadId');
    if (uploadId && req.method !== 'DELETE') {
      const set = passing.get(uploadId) ?? new Set();
      passing.set(uploadId, set.add(handling));
      void handling.finally(() => set.delete(handling));
    }
  });
  front.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => front.listen(port, '127.0.0.1', r));
  server.port = (front.address() as AddressInfo).port;
  server.url = `http://127.0.0.1:${server.port}`;
  return server;
}

/** Whether a part other than the last is under S3's 5 MiB minimum. */
function tooSmallPart(upload: string): boolean {
  if (!fs.existsSync(upload)) return false;
  const sizes = fs
    .readdirSync(upload)
    .filter((f) => /^\d+$/.test(f))
    .sort((a, b) => Number(a) - Number(b))
    .map((f) => fs.statSync(path.join(upload, f)).size);
  return sizes.slice(0, -1).some((size) => size < MIN_PART);
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const unescapeXml = (text: string) => text.replace(/&(amp|lt|gt|quot|apos);/g, (_, e: string) => ENTITIES[e]!);

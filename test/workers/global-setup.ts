import http from 'node:http';
import postgres from 'postgres';
import { openPostgres } from '../../db/client.ts';
import { migrate } from '../../db/migrate.ts';
import { startS3 } from '../support/servers/s3.ts';

/**
 * `/blob/<seed>/<size>`: `size` bytes, byte i being (31 i + seed) mod 256 (the tests compute the same);
 * `/ranged/blob/<seed>/<size>` the same bytes, with Range honoured.
 */
function blob(url: string): Buffer | null {
  const match = /^\/blob\/(\d+)\/(\d+)$/.exec(url);
  if (!match) return null;
  const seed = Number(match[1]);
  const bytes = Buffer.alloc(Number(match[2]));
  for (let i = 0; i < bytes.length; i++) bytes[i] = (31 * i + seed) & 255;
  return bytes;
}

/** Node side of the workerd suite: the database, migrated, http sources, and an S3 server to deliver to. */
export default async function setup() {
  const url = new URL(process.env.ECPDS_WORKERS_DATABASE_URL!);
  const name = url.pathname.slice(1);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => undefined });
  await sql.unsafe(`create database "${name}"`);
  const handle = openPostgres(url.toString(), { max: 2 });
  await migrate(handle);
  await handle.close();

  const source = http.createServer((req, res) => {
    const url = req.url ?? '';
    const bytes = blob(url.replace(/^\/ranged\//, '/'));
    const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (bytes && url.startsWith('/ranged/') && range) {
      // A source that honours Range (the plain /blob/ answers the whole file to any request).
      const [start, end] = [Number(range[1]), Math.min(Number(range[2]), bytes.length - 1)];
      res.writeHead(206, {
        'content-length': String(end - start + 1),
        'content-range': `bytes ${start}-${end}/${bytes.length}`,
      });
      res.end(bytes.subarray(start, end + 1));
    } else if (bytes) {
      res.writeHead(200, { 'content-length': String(bytes.length) });
      res.end(req.method === 'HEAD' ? undefined : bytes);
    } else if (req.url === '/data/fc.grib') {
      res.writeHead(200, { 'content-length': '4096' });
      res.end(req.method === 'HEAD' ? undefined : Buffer.alloc(4096));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) =>
    source.listen(Number(process.env.ECPDS_WORKERS_SOURCE_PORT), '127.0.0.1', resolve),
  );

  const s3 = await startS3('test-bucket', Number(process.env.ECPDS_WORKERS_S3_PORT));

  return async () => {
    await s3.stop();
    await new Promise<void>((resolve) => source.close(() => resolve()));
    // No `with (force)`: terminating the local Hyperdrive proxy's pooled connections would crash
    // it; wait for them to close instead, and leave the database behind if they never do.
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        await sql.unsafe(`drop database if exists "${name}"`);
        break;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    await sql.end();
  };
}

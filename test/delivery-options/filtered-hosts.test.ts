import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { dataFiles, dataTransfers } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { fileSpool } from '../../functions/node/spool.ts';
import { nodeFilters } from '../../functions/transfer-methods/filters.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import type { TestHost } from '../support/backups.ts';
import { eventually, restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { ACCOUNT, ACCOUNT_KEY, type Azurite, azuriteAvailability, startAzurite } from '../support/servers/azurite.ts';
import { type HttpSink, startHttpSink } from '../support/servers/http-sink.ts';
import { type NginxDav, nginxAvailability, startNginxDav } from '../support/servers/nginx-dav.ts';
import { type S3TestServer, s3TestHost, startS3 } from '../support/servers/s3.ts';
import { requireTools } from '../support/tools.ts';

/**
 * Compression filters end to end on every kind of host: a Node mover with its filters and its
 * spool delivers to a local directory, S3, HTTP, Azure and WebDAV; each receiver's copy, under
 * the filter's extension, is decompressed by the format's own tool and compared with the source;
 * the data file records the filter's name, size and MD5.
 */
const azurite = azuriteAvailability();
const nginx = nginxAvailability();
const missingTool = requireTools('zstd', 'bzip2', 'xz');
const skip = !azurite.run || !nginx.run || missingTool !== null;

let h: Harness;
let admin: string;
let sources: string;
let delivered: string;
let spoolDir: string;
let blobs: Azurite;
let dav: NginxDav;
let s3: S3TestServer;
let sink: HttpSink;
let mover: Mover;

beforeAll(async () => {
  if (skip) return;
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-filtered-src-')));
  delivered = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-filtered-dst-')));
  spoolDir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-filtered-spool-')));
  h = await createHarness({ sourceRoots: [sources] });
  admin = await h.client('operator', ['.*']);
  [blobs, dav, s3, sink] = await Promise.all([startAzurite(), startNginxDav(), startS3('filtered'), startHttpSink()]);
  await blobs.createContainer('box');
  mover = startMover(
    {
      ports: h.ports,
      methods: nodeTransferMethods({ fileRoots: [delivered] }),
      filters: nodeFilters(),
      spool: fileSpool(spoolDir),
      sources: nodeSourceReader({ roots: [sources], hosts: [] }),
    },
    { name: 'filtering', concurrency: 4, leaseMs: 3000, heartbeatMs: 200, pollMs: 40 },
  );
});
afterAll(async () => {
  await mover?.stop(5000);
  await Promise.all([blobs?.stop(), dav?.stop(), s3?.stop(), sink?.stop()]);
  await h?.close();
  for (const dir of [sources, delivered, spoolDir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');
/** Compressible, not trivially: lines of numbers as a product would hold. */
const content = (lines: number) =>
  Buffer.from(Array.from({ length: lines }, (_, i) => `${i};${Math.sin(i).toFixed(6)};station-${i % 97}\n`).join(''));

const DECOMPRESS: Record<string, [string, string[]]> = {
  zstd: ['zstd', ['-d', '-c', '-q']],
  bzip2a: ['bzip2', ['-d', '-c']],
  lzma: ['xz', ['--format=lzma', '-d', '-c']],
  gzip: ['gzip', ['-d', '-c']],
};
const decompress = (filter: string, bytes: Buffer) => {
  const [command, args] = DECOMPRESS[filter]!;
  return execFileSync(command, args, { input: bytes, maxBuffer: 64 * 1024 * 1024 });
};

async function deliver(destination: string, host: TestHost, filter: string) {
  await restoreDestination(h, admin, destination, [{ ...host, filterName: filter }]);
  const bytes = content(40_000);
  const file = path.join(sources, `${destination}.csv`);
  fs.writeFileSync(file, bytes);
  const q = new URLSearchParams({ destination, source: file, target: 'obs.csv' });
  const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
  const done = await eventually(
    async () => {
      const [now] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, t!.id));
      if (now!.status === 'RETR' && now!.message) throw new Error(now!.message);
      return now!.status === 'DONE' ? now : undefined;
    },
    30_000,
    `${destination} DONE`,
  );
  const [recorded] = await h.db.select().from(dataFiles).where(eq(dataFiles.id, r.json.id));
  return { bytes, transfer: done, recorded: recorded! };
}

/** What the receiver holds, decompressed and checked against the source and the recorded filter. */
function expectFiltered(
  filter: string,
  arrived: Buffer | null,
  sent: Awaited<ReturnType<typeof deliver>>,
  extension: string,
) {
  expect(arrived, `nothing arrived under obs.csv${extension}`).not.toBeNull();
  expect(md5(decompress(filter, arrived!))).toBe(md5(sent.bytes));
  expect(arrived!.length).toBeLessThan(sent.bytes.length / 2);
  expect(sent.recorded).toMatchObject({
    filterName: filter,
    filterSize: arrived!.length,
    filterChecksum: md5(arrived!),
    checksum: md5(sent.bytes),
  });
  expect(Number(sent.transfer.sent)).toBe(arrived!.length);
}

describe.skipIf(skip)(`filtered deliveries on every kind of host ${azurite.reason}${nginx.reason}`, () => {
  it('a local directory with zstd: <target>.zst, streamed through the tool, nothing else left', async () => {
    const dir = path.join(delivered, 'local');
    const sent = await deliver('FILTER_FILE', { method: 'file', dir }, 'zstd');
    expectFiltered('zstd', fs.readFileSync(path.join(dir, 'obs.csv.zst')), sent, '.zst');
    expect(fs.readdirSync(dir)).toEqual(['obs.csv.zst']);
  });

  it('S3 with lzma: one object <target>.lzma of the filtered size', async () => {
    const sent = await deliver('FILTER_S3', s3TestHost(s3, 'products'), 'lzma');
    expectFiltered('lzma', await s3.object('products/obs.csv.lzma'), sent, '.lzma');
    expect(await s3.object('products/obs.csv')).toBeNull();
  });

  it('HTTP with bzip2a: PUT <target>.bz2', async () => {
    const url = new URL(sink.url);
    const sent = await deliver(
      'FILTER_HTTP',
      { method: 'http', host: url.host, login: 'pusher', passwd: 'sink-secret', dir: 'drop' },
      'bzip2a',
    );
    expectFiltered('bzip2a', sink.file('drop/obs.csv.bz2') ?? null, sent, '.bz2');
  });

  it('Azure with gzip: the blob <target>.gz, in blocks', async () => {
    const data = `azure.url = "${blobs.url}"\nazure.multipartSize = "64k"\nazure.blockSize = "32k"`;
    const host: TestHost = { method: 'azure', host: '', login: ACCOUNT, passwd: ACCOUNT_KEY, dir: 'box/in', data };
    const sent = await deliver('FILTER_AZURE', host, 'gzip');
    expectFiltered('gzip', await blobs.blob('box', 'in/obs.csv.gz'), sent, '.gz');
  });

  it('WebDAV with zstd: <target>.zst moved into place, no temporary name left', async () => {
    const host: TestHost = {
      method: 'webdav',
      host: `127.0.0.1:${dav.port}`,
      dir: 'in',
      data: 'webdav.scheme = "http"',
    };
    const sent = await deliver('FILTER_DAV', host, 'zstd');
    expectFiltered('zstd', fs.readFileSync(path.join(dav.root, 'in', 'obs.csv.zst')), sent, '.zst');
    expect(fs.readdirSync(path.join(dav.root, 'in'))).toEqual(['obs.csv.zst']);
  });

  it('leaves no spooled file behind', () => {
    expect(fs.readdirSync(spoolDir)).toEqual([]);
  });
});

import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryFilter, filterOptions } from '../../core/dissemination/filters.ts';
import { methodOptions } from '../../core/dissemination/method-options.ts';
import type { HostConnection, TransferMethod } from '../../core/dissemination/methods.ts';
import { setOption } from '../../core/hosts/options.ts';
import { nodeFilters } from '../../functions/transfer-methods/filters.ts';
import { ftpMethod } from '../../functions/transfer-methods/ftp.ts';
import { type Proftpd, proftpdAvailability, startProftpd } from '../support/servers/proftpd.ts';

const availability = proftpdAvailability();
let server: Proftpd;
let ftp: TransferMethod;
beforeAll(async () => {
  if (!availability.run) return;
  server = await startProftpd();
  ftp = ftpMethod('ftp');
});
afterAll(async () => {
  await ftp?.close();
  await server?.stop();
});

async function* chunks(bytes: Uint8Array, size = 64 * 1024) {
  for (let at = 0; at < bytes.byteLength; at += size) yield bytes.subarray(at, at + size);
}
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const live = () => new AbortController().signal;
let dirs = 0;
function host(options: Record<string, string> = {}): HostConnection {
  const text = Object.entries(options).reduce((t, [name, value]) => setOption(t, name, value), '');
  return {
    hostId: 'h1',
    hostname: '127.0.0.1',
    login: server.user,
    password: server.password,
    directory: `opts${++dirs}`,
    options: methodOptions('ftp', `127.0.0.1:${server.port}`, text),
  };
}
const local = (target: HostConnection, name = '') => path.join(server.root, target.directory, name);
const entries = (target: HostConnection) => fs.readdirSync(local(target)).sort();

describe.skipIf(!availability.run)(`ftp delivery options against ProFTPD ${availability.reason}`, () => {
  it('writes <name><md5Ext> holding only the MD5 hex of the delivered bytes', async () => {
    const target = host({ 'ftp.md5Ext': '.md5' });
    const bytes = randomBytes(300_000);
    await ftp.send(target, { target: 'f.grib', size: bytes.byteLength }, chunks(bytes), live());
    expect(entries(target)).toEqual(['f.grib', 'f.grib.md5']);
    expect(fs.readFileSync(local(target, 'f.grib.md5'), 'utf8')).toBe(md5(bytes));
  });

  it('writes no sidecar by default', async () => {
    const target = host();
    await ftp.send(target, { target: 'g', size: 5 }, chunks(randomBytes(5)), live());
    expect(entries(target)).toEqual(['g']);
  });

  it('sends ftp.prePutCmd before the upload and ftp.postPutCmd on the written file before the rename', async () => {
    const target = host({
      'ftp.prePutCmd': `MKD ${'$filename'}.before`,
      'ftp.postPutCmd': `SITE CHMOD 600 ${'$filename'}`,
    });
    await ftp.send(target, { target: 'p.dat', size: 10 }, chunks(randomBytes(10)), live());
    expect(entries(target)).toEqual(['p.dat', 'p.dat.before']);
    expect(fs.statSync(local(target, 'p.dat.before')).isDirectory()).toBe(true);
    // The mode set on the temporary name travelled with the rename.
    expect(fs.statSync(local(target, 'p.dat')).mode & 0o777).toBe(0o600);
  });

  it('fails the attempt on an error reply to a command, before anything is written', async () => {
    const target = host({ 'ftp.prePutCmd': 'RNFR no-such-file' });
    await expect(ftp.send(target, { target: 'q.dat', size: 10 }, chunks(randomBytes(10)), live())).rejects.toThrow(
      /^FTP command RNFR no-such-file failed: 550/,
    );
    expect(fs.existsSync(local(target, 'q.dat'))).toBe(false);
  });

  it('fails on an error reply to a post command and leaves no file under the final or temporary name', async () => {
    const target = host({ 'ftp.postPutCmd': 'RNFR no-such-file' });
    await expect(ftp.send(target, { target: 'r.dat', size: 10 }, chunks(randomBytes(10)), live())).rejects.toThrow(
      /FTP command RNFR no-such-file failed/,
    );
    expect(entries(target)).toEqual([]);
  });

  it('compresses with gzip: the receiver gets <name>.gz, which decompresses to the source', async () => {
    const target = host({ 'ftp.md5Ext': '.md5' });
    const bytes = Buffer.from('a line of an observation report\n'.repeat(30_000));
    const filter = deliveryFilter(nodeFilters(), 'ftp', { filterName: 'gzip' }, filterOptions(new Map()), {
      source: '/x/report.txt',
      size: bytes.byteLength,
    });
    const done = await ftp.send(
      target,
      { target: 'report.txt', size: bytes.byteLength, filter },
      chunks(bytes),
      live(),
    );
    expect(entries(target)).toEqual(['report.txt.gz', 'report.txt.gz.md5']);
    const delivered = fs.readFileSync(local(target, 'report.txt.gz'));
    expect(gunzipSync(delivered).equals(bytes)).toBe(true);
    expect(done.filter).toEqual({ name: 'gzip', size: delivered.byteLength, md5: md5(delivered) });
    expect(done.sent).toBe(delivered.byteLength);
  });
});

import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryFilter, filterOptions } from '../../core/dissemination/filters.ts';
import { methodOptions } from '../../core/dissemination/method-options.ts';
import type { HostConnection } from '../../core/dissemination/methods.ts';
import { readOptions, setOption } from '../../core/hosts/options.ts';
import { nodeFilters } from '../../functions/transfer-methods/filters.ts';
import { type SftpMethod, sftpMethod } from '../../functions/transfer-methods/sftp.ts';
import { type Sshd, sshdMissing, startSshd } from '../support/servers/sshd.ts';

async function* chunks(bytes: Uint8Array, size = 64 * 1024) {
  for (let at = 0; at < bytes.byteLength; at += size) yield bytes.subarray(at, at + size);
}
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const live = () => new AbortController().signal;
const filesIn = (dir: string) => fs.readdirSync(dir).sort();
const data = (options: Record<string, string>) =>
  Object.entries(options).reduce((text, [name, value]) => setOption(text, name, value), '');

const missing = sshdMissing();

describe.skipIf(missing !== null)(
  `sftp delivery options against OpenSSH${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    let sshd: Sshd;
    let method: SftpMethod;
    beforeAll(async () => {
      sshd = await startSshd({ exec: true });
      method = sftpMethod();
    });
    afterAll(async () => {
      await method?.close();
      await sshd?.stop();
    });
    const host = (options: Record<string, string> = {}): HostConnection => ({
      hostId: 'h1',
      hostname: '127.0.0.1',
      login: sshd.user,
      password: sshd.password,
      directory: sshd.scratch(),
      options: methodOptions('sftp', `127.0.0.1:${sshd.port}`, data(options)),
    });

    it('writes no sidecar by default', async () => {
      const target = host();
      await method.send(target, { target: 'plain.bin', size: 10 }, chunks(randomBytes(10)), live());
      expect(filesIn(target.directory)).toEqual(['plain.bin']);
    });

    it('writes <name><md5Ext> holding only the MD5 hex of the delivered bytes, and no temporary file', async () => {
      const target = host({ 'sftp.md5Ext': '.md5' });
      const bytes = randomBytes(700_000);
      const done = await method.send(
        target,
        { target: 'sub/file.grib', size: bytes.byteLength },
        chunks(bytes),
        live(),
      );
      const dir = path.join(target.directory, 'sub');
      expect(filesIn(dir)).toEqual(['file.grib', 'file.grib.md5']);
      expect(fs.readFileSync(path.join(dir, 'file.grib.md5'), 'utf8')).toBe(md5(bytes));
      expect(done.md5).toBe(md5(bytes));
    });

    it('writes the sidecar with ectrans.createChecksum alone (extension .md5), with chmod on both', async () => {
      const target = host({ 'ectrans.createChecksum': 'yes', 'sftp.chmod': '640' });
      const bytes = randomBytes(1000);
      await method.send(target, { target: 'c.bin', size: 1000 }, chunks(bytes), live());
      expect(fs.readFileSync(path.join(target.directory, 'c.bin.md5'), 'utf8')).toBe(md5(bytes));
      expect(fs.statSync(path.join(target.directory, 'c.bin')).mode & 0o777).toBe(0o640);
      expect(fs.statSync(path.join(target.directory, 'c.bin.md5')).mode & 0o777).toBe(0o640);
    });

    it('runs sftp.execCmd over the connection after the rename, with $filename the delivered path', async () => {
      const target = host({ 'sftp.execCmd': 'cp $filename $filename.seen' });
      const bytes = randomBytes(5000);
      await method.send(target, { target: 'x.dat', size: 5000 }, chunks(bytes), live());
      expect(filesIn(target.directory)).toEqual(['x.dat', 'x.dat.seen']);
      expect(md5(fs.readFileSync(path.join(target.directory, 'x.dat.seen')))).toBe(md5(bytes));
    });

    it('accepts the exit code sftp.execCode names', async () => {
      const target = host({ 'sftp.execCmd': 'test -f $filename && exit 3', 'sftp.execCode': '3' });
      await method.send(target, { target: 'ok.dat', size: 3 }, chunks(randomBytes(3)), live());
      expect(filesIn(target.directory)).toEqual(['ok.dat']);
    });

    it('fails the attempt on an exit code other than sftp.execCode (0), in the reference words', async () => {
      const target = host({ 'sftp.execCmd': 'exit 7' });
      await expect(method.send(target, { target: 'ko.dat', size: 3 }, chunks(randomBytes(3)), live())).rejects.toThrow(
        "Failed to exec 'exit 7' (Unexpected return code for exec (0!=7))",
      );
    });

    it('compresses with gzip on the way: the name gets .gz, the receiver decompresses to the source', async () => {
      const target = host({ 'sftp.md5Ext': '.md5' });
      const bytes = Buffer.from('compressible line of a bulletin\n'.repeat(40_000));
      const all = readOptions(data({}));
      const filter = deliveryFilter(nodeFilters(), 'sftp', { filterName: 'gzip' }, filterOptions(all), {
        source: '/data/bulletin.txt',
        size: bytes.byteLength,
      });
      const done = await method.send(
        target,
        { target: 'bulletin.txt', size: bytes.byteLength, filter },
        chunks(bytes),
        live(),
      );
      expect(filesIn(target.directory)).toEqual(['bulletin.txt.gz', 'bulletin.txt.gz.md5']);
      const delivered = fs.readFileSync(path.join(target.directory, 'bulletin.txt.gz'));
      expect(gunzipSync(delivered).equals(bytes)).toBe(true);
      expect(done).toEqual({
        sent: delivered.byteLength,
        md5: md5(bytes),
        filter: { name: 'gzip', size: delivered.byteLength, md5: md5(delivered) },
      });
      expect(delivered.byteLength).toBeLessThan(bytes.byteLength / 10);
      expect(fs.readFileSync(path.join(target.directory, 'bulletin.txt.gz.md5'), 'utf8')).toBe(md5(delivered));
    });

    it('fails a compressed delivery whose source is not the registered size, leaving nothing behind', async () => {
      const target = host();
      const bytes = Buffer.alloc(50_000, 1);
      const filter = deliveryFilter(nodeFilters(), 'sftp', { filterName: 'gzip' }, filterOptions(new Map()), {
        source: 'f',
        size: 60_000,
      });
      await expect(
        method.send(target, { target: 'short', size: 60_000, filter }, chunks(bytes), live()),
      ).rejects.toThrow('Source changed size: 50000 bytes read, 60000 registered');
      expect(filesIn(target.directory)).toEqual([]);
    });
  },
);

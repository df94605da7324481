import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { methodOptions } from '../core/dissemination/method-options.ts';
import type { HostConnection } from '../core/dissemination/methods.ts';
import { ftpMethod } from '../functions/transfer-methods/ftp.ts';
import { startProftpd } from '../test/support/servers/proftpd.ts';

/**
 * The ftp and ftps methods against a local ProFTPD: many small files over pooled sessions, and
 * one large file, with curl's upload of the same large file as the loopback baseline.
 * `node --import tsx bench/ftp-method.ts`
 */
const SMALL = 64 * 1024;
const SMALL_FILES = 200;
const CONCURRENCY = 8;
const LARGE = 256 * 1024 * 1024;
const CHUNK = 1024 * 1024;

const server = await startProftpd();
const block = new Uint8Array(CHUNK).map((_, i) => (i * 31 + 7) % 251);
async function* bytes(total: number) {
  for (let at = 0; at < total; at += CHUNK) yield block.subarray(0, Math.min(CHUNK, total - at));
}
const host = (kind: 'ftp' | 'ftps', directory: string): HostConnection => ({
  hostId: 'bench',
  hostname: '127.0.0.1',
  login: server.user,
  password: server.password,
  directory,
  options: methodOptions(kind, `127.0.0.1:${server.port}`, ''),
});
// One signal per send, as each attempt has its own.
const signal = () => new AbortController().signal;
const rows: string[] = [];

try {
  for (const kind of ['ftp', 'ftps'] as const) {
    let connections = 0;
    const method = ftpMethod(kind, { onConnect: () => void connections++ });
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let i = next++; i < SMALL_FILES; i = next++) {
          await method.send(host(kind, `small-${kind}`), { target: `f${i}`, size: SMALL }, bytes(SMALL), signal());
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    rows.push(
      `${kind}: ${SMALL_FILES} files of 64 KiB, ${CONCURRENCY} at a time: ` +
        `${(SMALL_FILES / seconds).toFixed(0)} files/s ` +
        `(${seconds.toFixed(2)} s, ${connections} connections)`,
    );

    const t0 = performance.now();
    await method.send(host(kind, `large-${kind}`), { target: 'big.bin', size: LARGE }, bytes(LARGE), signal());
    const s = (performance.now() - t0) / 1000;
    rows.push(`${kind}: one 256 MiB file: ${(LARGE / 1e6 / s).toFixed(0)} MB/s (${s.toFixed(2)} s)`);
    await method.close();
    fs.rmSync(path.join(server.root, `large-${kind}`), { recursive: true, force: true });
  }

  const local = path.join(server.root, '..', 'curl-source.bin');
  const fd = fs.openSync(local, 'w');
  for (let at = 0; at < LARGE; at += CHUNK) fs.writeSync(fd, block);
  fs.closeSync(fd);
  const t1 = performance.now();
  execFileSync('curl', [
    ...['-sS', '--ftp-create-dirs', '-u', `${server.user}:${server.password}`],
    ...['-T', local, `ftp://127.0.0.1:${server.port}/curl/big.bin`],
  ]);
  const s = (performance.now() - t1) / 1000;
  rows.push(`curl (baseline): one 256 MiB file: ${(LARGE / 1e6 / s).toFixed(0)} MB/s (${s.toFixed(2)} s)`);
} finally {
  await server.stop();
}
console.log(rows.join('\n'));

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scaled } from '../../support/time.ts';
import { eventLines } from '../support.ts';
import {
  CLOSE,
  EXTENDED,
  EXTENDED_REPLY,
  HANDLE,
  OPEN,
  OPENDIR,
  type Packet,
  rawSftp,
  STATUS,
  statusOf,
  string,
  strings,
  uint32,
  uint64,
} from './raw-sftp.ts';
import { hex, password, STORED, type SumsScene, sumsScene } from './sums-scene.ts';

/**
 * The check-file extensions of SFTP over ssh2's client (lftp, the other client the issue names,
 * sends no extended request at all): a retrieved file's stored sums, under the rules of reading it.
 */
let s: SumsScene;

beforeAll(async () => {
  s = await sumsScene(true);
}, scaled(120_000));
afterAll(() => s?.close());

const A = STORED.get('sums/a.bin')!;
const login = (user: string) => rawSftp(s.sftp.port, { username: user, password: password(user) });
type Raw = Awaited<ReturnType<typeof login>>;
/** A check-file request's fields after its path or handle. */
const range = (algorithms: string, start = 0n, length = 0n, blockSize = 0) =>
  Buffer.concat([string(algorithms), uint64(start), uint64(length), uint32(blockSize)]);
const byName = (raw: Raw, path: string, algorithms: string, ...rest: [bigint?, bigint?, number?]) =>
  raw.request(EXTENDED, string('check-file-name'), string(path), range(algorithms, ...rest));
/** The algorithm and the hash (hex) of a check-file reply. */
const replied = (packet: Packet) => {
  expect(packet.type, packet.type === STATUS ? statusOf(packet).message : '').toBe(EXTENDED_REPLY);
  const { values, rest } = strings(packet.payload, 2);
  expect(values[0]!.toString()).toBe('check-file');
  return { algorithm: values[1]!.toString(), hash: rest.toString('hex') };
};

describe('check-file-name', () => {
  it("answers the first of the client's algorithms the file has a sum of, for the whole file", async () => {
    const raw = await login('alice');
    try {
      const before = eventLines(s.h, 'INH').length;
      expect(replied(await byName(raw, '/DEST/sums/a.bin', 'md5'))).toEqual({ algorithm: 'md5', hash: hex('md5', A) });
      expect(replied(await byName(raw, '/DEST/sums/a.bin', 'sha512,md5'))).toEqual({
        algorithm: 'sha512',
        hash: hex('sha512', A),
      });
      // sha1 and sha256 have no sum here: md5 is the first of the list that has one.
      const spaced = STORED.get('sums/with space.bin')!;
      expect(replied(await byName(raw, 'DEST/sums/with space.bin', 'sha1,sha256,md5'))).toEqual({
        algorithm: 'md5',
        hash: hex('md5', spaced),
      });
      // The whole file, said otherwise: a length past its end, one block as large as it.
      expect(replied(await byName(raw, '/DEST/sums/a.bin', 'md5', 0n, 1_000_000n, 300_000)).hash).toBe(hex('md5', A));
      expect(eventLines(s.h, 'INH')).toHaveLength(before);
    } finally {
      raw.close();
    }
  });

  it('answers OP_UNSUPPORTED for an algorithm it has no sum of, or a part of the file', async () => {
    const raw = await login('alice');
    try {
      for (const [algorithms, start, length, blockSize] of [
        ['sha1,crc32', 0n, 0n, 0],
        ['md5', 1n, 0n, 0],
        ['md5', 0n, 1000n, 0],
        ['md5', 0n, 0n, 4096],
      ] as const) {
        const answer = await byName(raw, '/DEST/sums/a.bin', algorithms, start, length, blockSize);
        expect(answer.type).toBe(STATUS);
        expect(statusOf(answer).code, `${algorithms} ${start} ${length} ${blockSize}`).toBe(8);
      }
      const badBlock = await byName(raw, '/DEST/sums/a.bin', 'md5', 0n, 0n, 100);
      expect(statusOf(badBlock).code).toBe(5);
      const other = await raw.request(EXTENDED, string('statvfs@openssh.com'), string('/DEST'));
      expect(statusOf(other).code).toBe(8);
    } finally {
      raw.close();
    }
  });

  it('answers as a read would for a path the user may not read', async () => {
    const alice = await login('alice');
    const nog = await login('nog');
    const ruled = await login('ruled');
    try {
      expect(statusOf(await byName(alice, '/DEST/nothing.bin', 'md5')).code).toBe(2);
      expect(statusOf(await byName(alice, '/OTHER/secret.bin', 'md5')).code).toBe(2);
      expect(statusOf(await byName(alice, '/DEST/sums', 'md5'))).toEqual({ code: 4, message: 'Is a directory' });
      expect(statusOf(await byName(nog, '/DEST/sums/a.bin', 'md5')).code).toBe(3);
      expect(statusOf(await byName(ruled, '/DEST/sums/with space.bin', 'md5')).code).toBe(3);
      expect(replied(await byName(ruled, '/DEST/sums/a.bin', 'md5')).hash).toBe(hex('md5', A));
    } finally {
      for (const raw of [alice, nog, ruled]) raw.close();
    }
  });
});

describe('check-file-handle', () => {
  it('answers for a file opened for reading, under its paramiko name check-file too', async () => {
    const raw = await login('alice');
    try {
      const opened = await raw.request(OPEN, string('/DEST/sums/a.bin'), uint32(1), uint32(0));
      expect(opened.type).toBe(HANDLE);
      const handle = strings(opened.payload, 1).values[0]!;
      for (const name of ['check-file-handle', 'check-file']) {
        const answer = await raw.request(EXTENDED, string(name), string(handle), range('sha512'));
        expect(replied(answer), name).toEqual({ algorithm: 'sha512', hash: hex('sha512', A) });
      }
      expect(statusOf(await raw.request(CLOSE, string(handle))).code).toBe(0);
      const dir = await raw.request(OPENDIR, string('/DEST/sums'));
      const dirHandle = strings(dir.payload, 1).values[0]!;
      const onDir = await raw.request(EXTENDED, string('check-file-handle'), string(dirHandle), range('md5'));
      expect(statusOf(onDir)).toEqual({ code: 4, message: 'Invalid handle' });
    } finally {
      raw.close();
    }
  });
});

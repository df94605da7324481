import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openLocalSource } from '../../functions/node/sources.ts';
import { incomingUser, portalScene, putFile } from '../portal/support.ts';
import { basic } from '../support/harness.ts';
import { inParallel, swapDirectoryForLink } from './swap.ts';

/**
 * A directory of a source swapped for a link leading out of the roots, over and over while the
 * source is opened: whatever the interleaving, no byte from outside is ever read.
 */
const temp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-escape-race-')));
const root = path.join(temp, 'root');
const outside = path.join(temp, 'outside');
const INSIDE = Buffer.alloc(4096, 'i');
const OUTSIDE = Buffer.alloc(4096, 'o');
for (const [dir, bytes] of [
  [root, INSIDE],
  [outside, OUTSIDE],
] as const) {
  fs.mkdirSync(path.join(dir, 'dir'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'dir/file.bin'), bytes);
}
afterAll(() => fs.rmSync(temp, { recursive: true, force: true }));

const source = path.join(root, 'dir/file.bin');

async function read(raw: string) {
  const { file } = await openLocalSource([root], raw);
  try {
    return await file.readFile();
  } finally {
    await file.close();
  }
}

describe('a source directory swapped for a link out of the roots while it is opened', () => {
  it('never reads the file outside, and still reads the one inside', async () => {
    const seen = { inside: 0, outside: 0, refused: 0 };
    const swap = swapDirectoryForLink(path.join(root, 'dir'), path.join(outside, 'dir'));
    try {
      await inParallel(20_000, 16, async () => {
        const bytes = await read(source).catch(() => null);
        if (bytes === null) seen.refused++;
        else if (bytes.equals(INSIDE)) seen.inside++;
        else seen.outside++;
      });
    } finally {
      await swap.stop();
    }
    expect(seen.outside).toBe(0);
    expect(seen.inside).toBeGreaterThan(0);
    expect((await read(source)).equals(INSIDE)).toBe(true);
  }, 120_000);
});

describe("the portal's HTTPS download of a source whose directory is swapped for a link out of the roots", () => {
  it('never sends a byte of the file outside, and still sends the one inside', async () => {
    const s = await portalScene();
    const agent = new https.Agent({ keepAlive: true, maxSockets: 8, rejectUnauthorized: false });
    try {
      await s.h.addDestination('DEST');
      await incomingUser(s.h, s.admin, { id: 'alice', password: 'Secret-1' }, ['DEST']);
      const put = await putFile(s.h, s.admin, s.sources, 'DEST', 'dir/file.bin', INSIDE);
      const elsewhere = path.join(s.dir, 'elsewhere');
      fs.mkdirSync(elsewhere);
      fs.writeFileSync(path.join(elsewhere, 'file.bin'), OUTSIDE);
      const download = () =>
        new Promise<Buffer | null>((resolve) => {
          const request = https.get(
            `${s.url}/portal/data/DEST/dir/file.bin`,
            { agent, headers: { authorization: basic('alice', 'Secret-1') } },
            (response) => {
              const chunks: Buffer[] = [];
              response.on('data', (chunk: Buffer) => chunks.push(chunk));
              response.on('end', () => resolve(response.statusCode === 200 ? Buffer.concat(chunks) : null));
              response.on('error', () => resolve(Buffer.concat(chunks)));
            },
          );
          request.on('error', () => resolve(null));
        });
      const seen = { inside: 0, outside: 0, refused: 0 };
      const swap = swapDirectoryForLink(path.dirname(put.source), elsewhere);
      try {
        await inParallel(1000, 8, async () => {
          const bytes = await download();
          if (bytes === null) seen.refused++;
          else if (bytes.equals(INSIDE)) seen.inside++;
          // Any byte of the other file, even in a download cut short, is a leak.
          else if (bytes.includes(OUTSIDE.subarray(0, 1))) seen.outside++;
        });
      } finally {
        await swap.stop();
      }
      expect(seen.outside).toBe(0);
      expect(seen.inside).toBeGreaterThan(0);
      expect((await download())?.equals(INSIDE)).toBe(true);
    } finally {
      agent.destroy();
      await s.close();
    }
  }, 300_000);
});

import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setDestinationStatus } from '../../core/dissemination/operator.ts';
import { type Sshd, sshdMissing, startSshd } from '../support/servers/sshd.ts';
import { md5, type RetrievalScene, retrievalScene } from './support.ts';

/**
 * The bytes a destination receives are those registered by the put: retrieved once into the store,
 * whatever happens to the source between the put and the send.
 */
const noSshd = sshdMissing();
let s: RetrievalScene;
let sshd: Sshd;

beforeAll(async () => {
  if (noSshd) return;
  s = await retrievalScene('delivered');
  sshd = await startSshd();
  s.retriever();
  s.mover();
});
afterAll(async () => {
  await s?.close();
  await sshd?.stop();
});

/** Puts to a stopped destination, waits for the retrieval, changes the source, then starts the destination. */
async function sendAfter(name: string, change: (put: { source: string; content: Buffer }) => void, size = 700_000) {
  const dir = await s.sftpDestination(sshd, name);
  const put = await s.put(name, { size });
  const [t] = await s.transfersOf(put.fileId);
  await s.eventually(s.statusIs(t!.id, 'WAIT'), 15_000, 'retrieved');
  change(put);
  await setDestinationStatus(s.h.ports, 'test', name, 'start');
  await s.eventually(s.statusIs(t!.id, 'DONE'), 30_000, 'sent');
  return { delivered: fs.readFileSync(path.join(dir, put.target)), put };
}

describe.skipIf(noSshd !== null)(`delivered from the store to a real sshd ${noSshd ?? ''}`, () => {
  it('a source rewritten with other bytes of the same size after the put: the registered bytes arrive', async () => {
    const { delivered, put } = await sendAfter('OVERWRITTEN', (registered) => {
      const other = randomBytes(registered.content.length);
      fs.writeFileSync(registered.source, other);
      expect(md5(other)).not.toBe(md5(registered.content));
    });
    expect(delivered.length).toBe(put.content.length);
    expect(md5(delivered)).toBe(md5(put.content));
    expect((await s.fileRow(put.fileId)).checksum).toBe(md5(put.content));
  });

  it('a file of several MiB, summed on worker threads: its bytes arrive, with the sums of the registered bytes', async () => {
    const size = 9 * 1024 * 1024 + 12_345;
    const { delivered, put } = await sendAfter('LARGER', (registered) => fs.writeFileSync(registered.source, ''), size);
    expect(delivered.length).toBe(size);
    expect(md5(delivered)).toBe(md5(put.content));
    expect((await s.fileRow(put.fileId)).checksum).toBe(md5(put.content));
    const [stored] = await s.objectsOf(put.fileId);
    expect(stored).toMatchObject({ size, md5: md5(put.content) });
    expect(stored!.sha512).toBe(createHash('sha512').update(put.content).digest('base64'));
  });

  it('a source deleted after the retrieval: the file is delivered all the same', async () => {
    const { delivered, put } = await sendAfter('DELETED', (registered) => fs.rmSync(registered.source));
    expect(fs.existsSync(put.source)).toBe(false);
    expect(md5(delivered)).toBe(md5(put.content));
  });
});

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { retrieve } from '../../../core/retrieval/retrieve.ts';
import { nodeSourceReader } from '../../../functions/node/sources.ts';
import { directoryStore } from '../../../functions/store/directory-store.ts';
import { bytesOf, incomingUser, putFile } from '../support.ts';
import { sftpScene } from './support.ts';

/**
 * The scene of the tests of sums over SFTP: files of DEST, and users who may or may not read them,
 * each with a password and a key. Retrieved, the files are read into a store as they are registered,
 * their sums measured then (and a file is in the tree once it is stored); else (ECPDS_RETRIEVAL=none)
 * they are read from their sources and no sum of theirs is known, but for the MD5 recorded of
 * `sums/a.bin` (as an upload records the MD5 of the bytes it received).
 */
export const STORED = new Map<string, Buffer>([
  ['sums/a.bin', bytesOf(300_000, 1)],
  ['sums/with space.bin', bytesOf(5000, 2)],
  ["sums/it's $5.txt", Buffer.from('quoted\n')],
]);
export const hex = (algorithm: string, bytes: Buffer) => createHash(algorithm).update(bytes).digest('hex');

/** Who is who: alice reads DEST; nog has no `get`; ruled may get only sums/a.bin (bob has OTHER only). */
export const USERS = ['alice', 'nog', 'ruled'] as const;
export const password = (user: string) => `Secret-${user}-1`;

export async function sumsScene(retrieved: boolean) {
  const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-portal-store-'));
  const store = retrieved ? directoryStore(storeDir) : undefined;
  const s = await sftpScene({}, { store });
  const { h, admin } = s;
  await h.addDestination('DEST');
  await h.addDestination('OTHER');
  for (const user of USERS) await incomingUser(h, admin, { id: user, password: password(user) }, ['DEST']);
  await incomingUser(h, admin, { id: 'bob', password: password('bob') }, ['OTHER']);
  await h.ports.repos.portal.revoke('nog', ['get']);
  await h.ports.repos.portal.setOption('ruled', 'portal.getPathPermRegex', 'DEST/sums/a\\.bin');
  const ids = new Map<string, number>();
  for (const [target, bytes] of STORED) ids.set(target, (await putFile(h, admin, s.sources, 'DEST', target, bytes)).id);
  await putFile(h, admin, s.sources, 'OTHER', 'secret.bin', bytesOf(100, 4));
  if (store) {
    // As a mover's retriever does: each file read once from its source into the store.
    const sources = nodeSourceReader({ roots: [s.sources], hosts: [] });
    const deps = { ports: h.ports, repo: h.ports.repos.retrieval, store, sources };
    for (const claim of await h.ports.repos.retrieval.claim('mover-1', 60_000, 10)) {
      expect(await retrieve(deps, 'mover-1', claim, new AbortController().signal)).toBe('stored');
    }
  } else await h.ports.repos.portal.recordChecksum(ids.get('sums/a.bin')!, hex('md5', STORED.get('sums/a.bin')!));
  const keys = Object.fromEntries(USERS.map((user) => [user, s.keyPair(user)]));
  for (const user of USERS) await s.addKey(user, keys[user]!.line);
  return {
    ...s,
    keys,
    async close() {
      await s.close();
      fs.rmSync(storeDir, { recursive: true, force: true });
    },
  };
}
export type SumsScene = Awaited<ReturnType<typeof sumsScene>>;

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { startMover } from '../../core/dissemination/mover.ts';
import { startRetriever } from '../../core/retrieval/retriever.ts';
import { sourceHostOpener } from '../../core/retrieval/source-host.ts';
import { destinations, hosts } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { directoryStore } from '../../functions/store/directory-store.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import type { TestHost } from '../support/backups.ts';
import { restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/**
 * A harness whose puts measure sources on Source hosts and whose store is a directory of its own, with
 * an operator client; `close` ends them all.
 */
export async function sourceHostHarness(label: string) {
  const putMethods = nodeTransferMethods({ fileRoots: [] });
  const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), `ecpds-${label}-store-`));
  const h = await createHarness({ store: directoryStore(storeDir), sourceHostMethods: putMethods });
  const admin = await h.client('operator', ['.*']);
  return {
    h,
    admin,
    async close() {
      await Promise.all(Object.values(putMethods).map((m) => m.close()));
      await h.close();
      fs.rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

/**
 * Restores `destination` with a host to deliver to and a Source host, and names the latter as its
 * Source host (`hostForSourceName`, the host's id); answers that id.
 */
export async function withSourceHost(
  h: Harness,
  admin: string,
  destination: string,
  target: TestHost,
  source: TestHost & { nickname: string },
): Promise<string> {
  await restoreDestination(h, admin, destination, [target, { ...source, type: 'Source' }]);
  const [row] = await h.db.select().from(hosts).where(eq(hosts.nickname, source.nickname));
  const id = String(row!.hostid);
  await h.db.update(destinations).set({ hostForSourceName: id }).where(eq(destinations.name, destination));
  return id;
}

/**
 * A retriever reading Source hosts as the Node mover starts one, and a mover unless `mover` is
 * false, until `run` is done.
 */
export async function withEngine<T>(h: Harness, run: () => Promise<T>, parts = { mover: true }): Promise<T> {
  const retrievalMethods = nodeTransferMethods({ fileRoots: [] });
  const sources = nodeSourceReader({ roots: [], hosts: [] });
  const retriever = startRetriever(
    {
      ports: h.ports,
      repo: h.ports.repos.retrieval,
      store: h.ports.store!,
      sources,
      sourceHosts: sourceHostOpener(h.ports, h.ports.repos.retrieval, retrievalMethods),
    },
    { name: 'source-host-retriever', concurrency: 2, leaseMs: 3000, pollMs: 30 },
  );
  const mover = parts.mover
    ? startMover(
        { ports: h.ports, methods: nodeTransferMethods({ fileRoots: [] }), sources },
        { name: 'source-host-mover', concurrency: 2, leaseMs: 3000, heartbeatMs: 200, pollMs: 30 },
      )
    : null;
  try {
    return await run();
  } finally {
    await Promise.all([retriever.stop(), mover?.stop(5000)]);
    await Promise.all(Object.values(retrievalMethods).map((m) => m.close()));
  }
}

import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { dataTransfers, transferHistory } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import { eventually, restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { ACCOUNT, ACCOUNT_KEY, type Azurite, azuriteAvailability, startAzurite } from '../support/servers/azurite.ts';
import { type NginxDav, nginxAvailability, startNginxDav } from '../support/servers/nginx-dav.ts';

/**
 * A Node mover delivering through the azure and webdav modules, hosts restored through the API as
 * an operator would: the file arrives whole under its name, the transfer ends DONE with its history,
 * and a refused credential requeues it with a comment that never holds the secret.
 */
const azurite = azuriteAvailability();
const nginx = nginxAvailability();

let h: Harness;
let admin: string;
let sources: string;
let blobs: Azurite;
let dav: NginxDav;
let mover: Mover;

beforeAll(async () => {
  if (!azurite.run || !nginx.run) return;
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-azure-webdav-')));
  h = await createHarness({ sourceRoots: [sources] });
  admin = await h.client('operator', ['.*']);
  [blobs, dav] = await Promise.all([startAzurite(), startNginxDav({ user: 'ecpds', password: 'dav secret' })]);
  await blobs.createContainer('box');
  mover = startMover(
    {
      ports: h.ports,
      methods: nodeTransferMethods({ fileRoots: [] }),
      sources: nodeSourceReader({ roots: [sources], hosts: [] }),
    },
    { name: 'azure-webdav', concurrency: 4, leaseMs: 3000, heartbeatMs: 200, pollMs: 40 },
  );
});
afterAll(async () => {
  await mover?.stop(5000);
  await blobs?.stop();
  await dav?.stop();
  await h?.close();
  if (sources) fs.rmSync(sources, { recursive: true, force: true });
});

const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');
let files = 0;
async function put(destination: string, bytes: number) {
  const content = randomBytes(bytes);
  const target = `f${++files}.bin`;
  const file = path.join(sources, `${destination}-${target}`);
  fs.writeFileSync(file, content);
  const q = new URLSearchParams({ destination, source: file, target });
  const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
  return { id: t!.id, target, md5: md5(content) };
}
const statusIs = (id: number, status: string) => async () => {
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id));
  return t?.status === status ? t : undefined;
};
const historyOf = async (id: number) =>
  (await h.db.select().from(transferHistory).where(eq(transferHistory.transferId, id))).map((r) => ({
    status: r.status,
    comment: r.comment,
  }));

describe.skipIf(!azurite.run || !nginx.run)(
  `a mover on azure and webdav hosts ${azurite.reason}${nginx.reason}`,
  () => {
    it('azure: the blob arrives whole, DONE with its history', async () => {
      const data = `azure.url = "${blobs.url}"\nazure.multipartSize = "1m"\nazure.blockSize = "256k"`;
      await restoreDestination(h, admin, 'AZURE_OK', [
        { method: 'azure', host: '', login: ACCOUNT, passwd: ACCOUNT_KEY, dir: 'box/in', data },
      ]);
      const sent = await put('AZURE_OK', 1_500_000);
      await eventually(statusIs(sent.id, 'DONE'), 30_000, 'DONE');
      expect(md5((await blobs.blob('box', `in/${sent.target}`))!)).toBe(sent.md5);
      expect((await historyOf(sent.id)).map((r) => r.status)).toEqual(expect.arrayContaining(['EXEC', 'DONE']));
    });

    it('webdav: the file arrives whole under its name only, DONE with its history', async () => {
      await restoreDestination(h, admin, 'DAV_OK', [
        {
          method: 'webdav',
          host: `127.0.0.1:${dav.port}`,
          login: 'ecpds',
          passwd: 'dav secret',
          dir: 'in',
          data: 'webdav.scheme = "http"',
        },
      ]);
      const sent = await put('DAV_OK', 800_000);
      await eventually(statusIs(sent.id, 'DONE'), 30_000, 'DONE');
      expect(md5(fs.readFileSync(path.join(dav.root, 'in', sent.target)))).toBe(sent.md5);
      expect(fs.readdirSync(path.join(dav.root, 'in'))).toEqual([sent.target]);
      expect((await historyOf(sent.id)).map((r) => r.status)).toEqual(expect.arrayContaining(['EXEC', 'DONE']));
    });

    it('a refused key requeues the transfer, its comment without the key', async () => {
      const wrongKey = Buffer.from('a key of another account').toString('base64');
      await restoreDestination(h, admin, 'AZURE_REFUSED', [
        {
          method: 'azure',
          host: '',
          login: ACCOUNT,
          passwd: wrongKey,
          dir: 'box/in',
          data: `azure.url = "${blobs.url}"`,
        },
      ]);
      const sent = await put('AZURE_REFUSED', 1000);
      const failed = await eventually(
        async () => (await historyOf(sent.id)).find((r) => r.status === 'RETR' || r.status === 'STOP'),
        30_000,
        'a failure in the history',
      );
      const comments = (await historyOf(sent.id)).map((r) => r.comment ?? '').join('\n');
      expect(comments).toContain('403 AuthorizationFailure');
      expect(comments).not.toContain(wrongKey);
      expect(failed).toBeDefined();
      expect(await blobs.blob('box', `in/${sent.target}`)).toBeNull();
    });
  },
);

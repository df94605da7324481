import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapWebAdmin } from '../../core/console/sign-in.ts';
import type { TransferMethod } from '../../core/dissemination/methods.ts';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { setDestinationStatus } from '../../core/dissemination/operator.ts';
import { showTransfer } from '../../core/dissemination/transfers.ts';
import { setOption } from '../../core/hosts/options.ts';
import { type Retriever, startRetriever } from '../../core/retrieval/retriever.ts';
import { dataFiles, dataTransfers, storedObjects, transferHistory } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { directoryStore } from '../../functions/store/directory-store.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import { eventually, restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { type Sshd, sshdMissing, startSshd } from '../support/servers/sshd.ts';

/**
 * A mover sending retrieved files to a real sshd from a directory store: the stored MD5 is what it
 * announces (the md5Ext sidecar, the transfer's checksum) without hashing the bytes again, and a
 * stored copy lost before its send is retrieved again from its source, or fails the transfer when
 * the source is gone too.
 */
const noSshd = sshdMissing();

let h: Harness;
let admin: string;
let sources: string;
let storeDir: string;
let sshd: Sshd;
let mover: Mover;
let retriever: Retriever;
/** The MD5 each send was given before it started, by target: null when the method had to hash. */
const givenMd5 = new Map<string, string | null>();

function recording(inner: TransferMethod): TransferMethod {
  return {
    send(host, file, source, signal) {
      givenMd5.set(file.target, file.md5 ?? null);
      return inner.send(host, file, source, signal);
    },
    close: () => inner.close(),
  };
}

beforeAll(async () => {
  if (noSshd) return;
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-stored-src-')));
  storeDir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-stored-store-')));
  const store = directoryStore(storeDir);
  h = await createHarness({ sourceRoots: [sources], store });
  admin = await h.client('operator', ['.*']);
  sshd = await startSshd();
  const reader = nodeSourceReader({ roots: [sources], hosts: [] });
  const methods = nodeTransferMethods({ fileRoots: [] });
  mover = startMover(
    { ports: h.ports, methods: { ...methods, sftp: recording(methods.sftp!) }, sources: reader },
    { name: 'stored-mover', concurrency: 4, leaseMs: 3000, heartbeatMs: 200, pollMs: 40 },
  );
  retriever = startRetriever(
    { ports: h.ports, repo: h.ports.repos.retrieval, store, sources: reader },
    { name: 'stored-mover', concurrency: 2, leaseMs: 3000, pollMs: 40 },
  );
});
afterAll(async () => {
  await mover?.stop(5000);
  await retriever?.stop();
  await sshd?.stop();
  await h?.close();
  for (const dir of [sources, storeDir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const md5 = (bytes: Buffer) => createHash('md5').update(bytes).digest('hex');
const sha512 = (bytes: Buffer) => createHash('sha512').update(bytes).digest('base64');
let files = 0;

/** Puts a new source file to `destination`; answers its transfer, source path and bytes. */
async function put(destination: string, bytes = 200_000) {
  const content = randomBytes(bytes);
  const target = `f${++files}.bin`;
  const file = path.join(sources, `${destination}-${target}`);
  fs.writeFileSync(file, content);
  const q = new URLSearchParams({ destination, source: file, target });
  const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
  return { id: t!.id, dataFileId: r.json.id as number, target, file, content };
}

const transfer = async (id: number) => (await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id)))[0]!;
const dataFile = async (id: number) => (await h.db.select().from(dataFiles).where(eq(dataFiles.id, id)))[0]!;
const statusIs = (id: number, status: string) => async () => {
  const t = await transfer(id);
  return t.status === status ? t : undefined;
};
const historyOf = async (id: number) =>
  h.db
    .select({ status: transferHistory.status, comment: transferHistory.comment, error: transferHistory.error })
    .from(transferHistory)
    .where(eq(transferHistory.transferId, id))
    .orderBy(asc(transferHistory.id));

/** A console page as the signed-in administrator sees it. */
async function consolePage(path: string) {
  const password = (await bootstrapWebAdmin(h.ports))!;
  const jar = new Map<string, string>();
  const request = async (method: string, to: string, form?: Record<string, string>) => {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const body = form && new URLSearchParams(form);
    const res = await h.app.request(`https://localhost${to}`, {
      method,
      body,
      headers: { ...(cookie && { cookie }), ...(body && { 'content-type': 'application/x-www-form-urlencoded' }) },
    });
    for (const line of res.headers.getSetCookie()) {
      const [, name, value] = /^([^=]+)=([^;]*)/.exec(line)!;
      jar.set(name!, value!);
    }
    return { status: res.status, text: await res.text() };
  };
  const csrf = /name="csrf" value="([^"]+)"/.exec((await request('GET', '/console/login')).text)![1]!;
  const signedIn = await request('POST', '/console/login', { csrf, username: 'admin', password });
  expect(signedIn.status).toBe(303);
  const page = await request('GET', path);
  expect(page.status).toBe(200);
  return page.text;
}

/** A stopped destination to an sshd directory with the md5Ext sidecar; started once its file is retrieved. */
async function destination(name: string) {
  const dir = sshd.scratch(`${name.toLowerCase()}-`);
  const data = setOption('', 'sftp.md5Ext', '.md5');
  const host = { method: 'sftp' as const, host: `127.0.0.1:${sshd.port}`, login: sshd.user, passwd: sshd.password };
  await restoreDestination(h, admin, name, [{ ...host, dir, data, retryFrequency: 60_000 }], { start: false });
  return dir;
}

/** Puts a file and waits for its retrieval: answers it with the key of its stored copy. */
async function retrieved(name: string) {
  const sent = await put(name);
  await eventually(statusIs(sent.id, 'WAIT'), 20_000, 'retrieved');
  const key = (await dataFile(sent.dataFileId)).objectKey!;
  expect(key).not.toBeNull();
  return { ...sent, key };
}

describe.skipIf(noSshd !== null)(`a retrieved file sent to a real sshd ${noSshd ?? ''}`, () => {
  it('sends the stored MD5 (md5Ext, the checksum) without hashing, though the source changed since', async () => {
    const dir = await destination('STORED_MD5');
    const sent = await retrieved('STORED_MD5');
    const [object] = await h.db.select().from(storedObjects).where(eq(storedObjects.key, sent.key));
    expect(object).toMatchObject({ md5: md5(sent.content), sha512: sha512(sent.content), size: sent.content.length });
    // Run 12 overwrites run 00 with the same size after the put.
    fs.writeFileSync(sent.file, randomBytes(sent.content.length));
    await setDestinationStatus(h.ports, 'test', 'STORED_MD5', 'start');

    await eventually(statusIs(sent.id, 'DONE'), 20_000, 'DONE');
    expect(givenMd5.get(sent.target)).toBe(md5(sent.content));
    expect(md5(fs.readFileSync(path.join(dir, sent.target)))).toBe(md5(sent.content));
    expect(fs.readFileSync(path.join(dir, `${sent.target}.md5`), 'utf8')).toBe(md5(sent.content));
    const file = await dataFile(sent.dataFileId);
    expect(file.checksum).toBe(object!.md5);
    expect(file.sha512).toBe(object!.sha512);
    // What `transfer show` prints, and the console's row of the transfer.
    expect(await showTransfer(h.ports, sent.id)).toMatchObject({ md5: object!.md5, sha512: object!.sha512 });
    const page = await consolePage('/console/monitor/destinations/STORED_MD5');
    const row = page.slice(page.indexOf(`id="transfer-${sent.id}"`));
    expect(row.slice(0, row.indexOf('</tr>'))).toMatch(
      new RegExp(
        `MD5 <code>${object!.md5}</code>[\\s\\S]*SHA-512 <code>${object!.sha512.replace(/[+/]/g, '\\$&')}</code>`,
      ),
    );
  });

  it('retrieves a file again whose stored copy was removed before its send, then delivers it', async () => {
    const dir = await destination('STORED_GONE');
    const sent = await retrieved('STORED_GONE');
    fs.rmSync(path.join(storeDir, sent.key));
    await setDestinationStatus(h.ports, 'test', 'STORED_GONE', 'start');

    await eventually(statusIs(sent.id, 'DONE'), 30_000, 'DONE after a second retrieval');
    expect(md5(fs.readFileSync(path.join(dir, sent.target)))).toBe(md5(sent.content));
    expect(fs.readFileSync(path.join(dir, `${sent.target}.md5`), 'utf8')).toBe(md5(sent.content));
    const file = await dataFile(sent.dataFileId);
    expect(file.objectKey).not.toBe(sent.key);
    expect(fs.existsSync(path.join(storeDir, file.objectKey!))).toBe(true);
    const history = await historyOf(sent.id);
    const requeued = history.find((r) => r.status === 'SCHE' && r.error);
    expect(requeued?.comment).toContain(`Stored object ${sent.key} not found`);
    expect(history.filter((r) => r.status === 'FETC')).toHaveLength(2);
    expect(history.filter((r) => r.status === 'DONE')).toHaveLength(1);
  });

  it('retrieves a file again whose stored copy lost bytes', async () => {
    const dir = await destination('STORED_SHORT');
    const sent = await retrieved('STORED_SHORT');
    fs.truncateSync(path.join(storeDir, sent.key), 1000);
    await setDestinationStatus(h.ports, 'test', 'STORED_SHORT', 'start');

    await eventually(statusIs(sent.id, 'DONE'), 30_000, 'DONE after a second retrieval');
    expect(md5(fs.readFileSync(path.join(dir, sent.target)))).toBe(md5(sent.content));
    const history = await historyOf(sent.id);
    expect(history.find((r) => r.status === 'SCHE' && r.error)?.comment).toContain(
      `Stored object ${sent.key} has 1000 bytes, ${sent.content.length} stored`,
    );
  });

  it('fails the transfer, naming why, when both the stored copy and the source are gone', async () => {
    const dir = await destination('STORED_LOST');
    const sent = await retrieved('STORED_LOST');
    fs.rmSync(path.join(storeDir, sent.key));
    fs.rmSync(sent.file);
    await setDestinationStatus(h.ports, 'test', 'STORED_LOST', 'start');

    const failed = await eventually(statusIs(sent.id, 'RETR'), 20_000, 'RETR');
    expect(failed.message).toContain(`Stored object ${sent.key} not found`);
    expect(failed.message).toContain('not found');
    expect((await dataFile(sent.dataFileId)).objectKey).toBe(sent.key);
    const history = await historyOf(sent.id);
    expect(history.find((r) => r.status === 'STOP')?.comment).toBe(failed.message);
    expect(history.filter((r) => r.status === 'FETC')).toHaveLength(1);
    expect(fs.existsSync(path.join(dir, sent.target))).toBe(false);
  });
});

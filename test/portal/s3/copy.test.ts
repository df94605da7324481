import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCopySource } from '../../../core/portal/s3-copy.ts';
import { retrieve } from '../../../core/retrieval/retrieve.ts';
import { dataFiles, dataTransfers, destinations, transferHistory } from '../../../db/schema.ts';
import { nodeSourceReader } from '../../../functions/node/sources.ts';
import { directoryStore } from '../../../functions/store/directory-store.ts';
import { scaled } from '../../support/time.ts';
import { bytesOf, eventFields, eventLines, incomingUser, md5, putFile } from '../support.ts';
import { httpsSend, type S3Credentials, type S3Scene, s3Scene, signed, xmlText } from './support.ts';

/**
 * CopyObject and UploadPartCopy on the portal's S3 listener, signed as SDKs sign them: who may copy
 * (`get` on the source, `put` on the target, both its destinations), what a copy registers (what an
 * upload registers: "Via Data Portal", the target's incoming.* options, counted as an upload), from
 * the bytes the source was registered with (its stored copy), and how S3 clients name the source.
 */
let s: S3Scene;
let storeDir: string;
/** As a mover's retriever does: each file registered read once from its source into the store. */
let retrieveAll: () => Promise<void>;
const alice = { accessKeyId: 'alice', secretAccessKey: 'Secret-1' };
const REGISTERED = bytesOf(40_000, 1);
const SPACED = bytesOf(300, 2);
const PARTS = bytesOf(12 * 1024 * 1024, 3);

beforeAll(async () => {
  storeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-portal-copy-store-'));
  const store = directoryStore(storeDir);
  s = await s3Scene({ store });
  const { h, admin } = s;
  for (const d of ['DEST', 'HELD', 'OTHER']) await h.addDestination(d);
  const incoming = 'incoming.standby = "yes"\nincoming.priority = "7"\nincoming.lifetime = "2d"';
  await h.db.update(destinations).set({ data: incoming }).where(eq(destinations.name, 'HELD'));
  await incomingUser(h, admin, { id: 'alice', password: 'Secret-1', grant: ['put'] }, ['DEST', 'HELD']);
  await incomingUser(h, admin, { id: 'reader', password: 'Secret-2' }, ['DEST', 'HELD']);
  await incomingUser(h, admin, { id: 'ruled', password: 'Secret-3', grant: ['put'] }, ['DEST', 'HELD']);
  await h.ports.repos.portal.setOption('ruled', 'portal.getPathPermRegex', 'DEST/public/.*');
  await incomingUser(h, admin, { id: 'capped', password: 'Secret-4', grant: ['put'] }, ['DEST', 'HELD']);
  await h.ports.repos.portal.setOption('capped', 'portal.maxUploadBytes', '1000');
  await incomingUser(h, admin, { id: 'bob', password: 'Secret-5', grant: ['put'] }, ['OTHER']);
  await putFile(h, admin, s.sources, 'DEST', 'registered.bin', REGISTERED);
  await putFile(h, admin, s.sources, 'DEST', 'sp ace/ü+1.txt', SPACED);
  await putFile(h, admin, s.sources, 'DEST', 'public/p.txt', bytesOf(100, 4));
  await putFile(h, admin, s.sources, 'DEST', 'parts.bin', PARTS);
  await putFile(h, admin, s.sources, 'OTHER', 'o.txt', bytesOf(10, 5));
  retrieveAll = async () => {
    const sources = nodeSourceReader({ roots: [s.sources, s.uploads], hosts: [] });
    const deps = { ports: h.ports, repo: h.ports.repos.retrieval, store, sources };
    for (const claim of await h.ports.repos.retrieval.claim('mover-1', 60_000, 10)) {
      expect(await retrieve(deps, 'mover-1', claim, new AbortController().signal)).toBe('stored');
    }
  };
  await retrieveAll();
  // The source changes after retrieval (same size, other bytes): a copy is of what was registered.
  fs.writeFileSync(path.join(s.sources, 'DEST', 'registered.bin'), bytesOf(REGISTERED.length, 99));
}, scaled(60_000));
afterAll(async () => {
  await s?.close();
  fs.rmSync(storeDir, { recursive: true, force: true });
});

/** A request to the listener over HTTPS, signed as an SDK signs it. */
async function send(target: string, credentials: S3Credentials, call: Parameters<typeof signed>[2] = {}) {
  const request = await signed(`${s.listener.url}/${target}`, credentials, call);
  const body = call.body === undefined ? [] : [Buffer.from(call.body)];
  const headers = Object.fromEntries(request.headers);
  const answer = await httpsSend(s.listener.url, { url: request.url, method: request.method, headers, body });
  return { ...answer, code: xmlText(answer.text, 'Code') };
}
const copy = (target: string, source: string, credentials: S3Credentials = alice, headers = {}) =>
  send(target, credentials, { method: 'PUT', headers: { 'x-amz-copy-source': source, ...headers } });

/** The ETag of an answer's XML, unescaped (S3 writes its quotes as &quot;). */
const etagIn = (xml: string) => xmlText(xml, 'ETag')?.replaceAll('&quot;', '"');
const transferAt = async (destination: string, target: string) =>
  (await s.h.db.select().from(dataTransfers).where(eq(dataTransfers.target, target))).find(
    (t) => t.destination === destination,
  );

describe('CopyObject', () => {
  it('registers the copy in the target as an upload: "Via Data Portal", its incoming options', async () => {
    const r = await copy('HELD/copies/registered.bin', '/DEST/registered.bin');
    expect(r.status, r.text).toBe(200);
    expect(r.text).toMatch(/^<\?xml[^>]*>\n<CopyObjectResult xmlns="http:\/\/s3\.amazonaws\.com\/doc\/2006-03-01\/">/);
    expect(etagIn(r.text)).toBe(`"${md5(REGISTERED)}"`);

    // Retrieved into the store as every file registered, then held: the destination's incoming.standby.
    expect((await transferAt('HELD', 'copies/registered.bin'))!.status).toBe('SCHE');
    await retrieveAll();
    const transfer = (await transferAt('HELD', 'copies/registered.bin'))!;
    expect(transfer).toMatchObject({ status: 'HOLD', priority: 7 });
    expect(transfer.expiresAt.getTime() - transfer.scheduledAt.getTime()).toBe(2 * 86_400_000);
    const history = await s.h.db
      .select()
      .from(transferHistory)
      .where(eq(transferHistory.transferId, transfer.id))
      .orderBy(asc(transferHistory.id));
    expect(history[0]?.comment).toBe('Via Data Portal');
    const [file] = await s.h.db.select().from(dataFiles).where(eq(dataFiles.id, transfer.dataFileId));
    expect(file).toMatchObject({ registeredBy: 'portal:alice', checksum: md5(REGISTERED) });
    expect(xmlText(r.text, 'LastModified')).toBe(file!.createdAt.toISOString());
    // The registered bytes (the stored copy), not the source as it is now; kept where uploads are.
    expect(file!.source).toBe(path.join(s.uploads, 'HELD', 'copies', 'registered.bin'));
    expect(md5(fs.readFileSync(file!.source))).toBe(md5(REGISTERED));
    expect(eventLines(s.h, 'INH').map(eventFields).at(-1)).toMatchObject({
      DestinationName: 'HELD',
      FileName: 'copies/registered.bin',
      BytesSent: String(REGISTERED.length),
      UserId: 'alice',
      TransferProtocol: 's3',
      Action: 'upload',
    });
  });

  it('reads x-amz-copy-source URL-encoded, with or without its leading slash, and versionId=null', async () => {
    for (const [i, source] of [
      'DEST/sp%20ace/%C3%BC%2B1.txt',
      '/DEST/sp%20ace/%C3%BC%2B1.txt',
      'DEST%2Fsp%20ace%2F%C3%BC%2B1.txt?versionId=null',
    ].entries()) {
      const r = await copy(`DEST/encoded/${i}.txt`, source);
      expect(r.status, r.text).toBe(200);
      expect(etagIn(r.text)).toBe(`"${md5(SPACED)}"`);
    }
    expect(readCopySource('DEST/a+b%2Bc.txt')).toEqual({ bucket: 'DEST', key: 'a+b+c.txt' });
  });

  it('refuses a version, a source or target it may not use, a missing source, and a copy onto itself', async () => {
    const version = await copy('DEST/v.bin', 'DEST/registered.bin?versionId=3HL4kqtJlcpXroDTDmJ');
    expect([version.status, version.code]).toEqual([400, 'InvalidArgument']);
    expect(xmlText(version.text, 'Message')).toMatch(/no versions/);
    expect((await copy('DEST/m.bin', 'DEST/missing.bin')).code).toBe('NoSuchKey');
    expect((await copy('DEST/b.bin', 'OTHER/o.txt')).code).toBe('NoSuchBucket');
    expect((await copy('OTHER/b.bin', 'DEST/registered.bin')).code).toBe('NoSuchBucket');
    expect((await copy('DEST/x.bin', 'DEST')).code).toBe('InvalidArgument');
    expect((await copy('DEST/x.bin', 'DEST/a/../registered.bin')).code).toBe('InvalidArgument');
    const self = await copy('DEST/registered.bin', 'DEST/registered.bin');
    expect([self.status, self.code]).toEqual([400, 'InvalidRequest']);

    const reader = { accessKeyId: 'reader', secretAccessKey: 'Secret-2' };
    expect((await copy('HELD/r.bin', 'DEST/registered.bin', reader)).code).toBe('AccessDenied');
    const ruled = { accessKeyId: 'ruled', secretAccessKey: 'Secret-3' };
    expect((await copy('HELD/p.txt', 'DEST/registered.bin', ruled)).code).toBe('AccessDenied');
    expect((await copy('HELD/p.txt', 'DEST/public/p.txt', ruled)).status).toBe(200);
    const capped = { accessKeyId: 'capped', secretAccessKey: 'Secret-4' };
    expect((await copy('HELD/c.bin', 'DEST/registered.bin', capped)).code).toBe('SlowDown');
    expect(await transferAt('HELD', 'c.bin')).toBeUndefined();
  });

  it("copies only while the source's x-amz-copy-source-if-* conditions hold", async () => {
    const tag = `"${md5(REGISTERED)}"`;
    const failed = await copy('DEST/c1.bin', 'DEST/registered.bin', alice, { 'x-amz-copy-source-if-match': '"0"' });
    expect([failed.status, failed.code]).toEqual([412, 'PreconditionFailed']);
    const unchanged = { 'x-amz-copy-source-if-none-match': tag };
    expect((await copy('DEST/c2.bin', 'DEST/registered.bin', alice, unchanged)).status).toBe(412);
    expect(
      (await copy('DEST/c3.bin', 'DEST/registered.bin', alice, { 'x-amz-copy-source-if-match': tag })).status,
    ).toBe(200);
  });
});

describe('UploadPartCopy', () => {
  it('makes parts of ranges of a source, completed into one file', async () => {
    const created = await send('HELD/joined.bin?uploads', alice, { method: 'POST' });
    const uploadId = xmlText(created.text, 'UploadId')!;
    const half = PARTS.length / 2;
    const etags: string[] = [];
    for (const [n, range] of [`bytes=0-${half - 1}`, `bytes=${half}-${PARTS.length - 1}`].entries()) {
      const headers = { 'x-amz-copy-source-range': range };
      const r = await copy(
        `HELD/joined.bin?partNumber=${n + 1}&uploadId=${uploadId}`,
        'DEST/parts.bin',
        alice,
        headers,
      );
      expect(r.status, r.text).toBe(200);
      expect(r.text).toContain('<CopyPartResult');
      etags.push(etagIn(r.text)!);
    }
    expect(etags).toEqual([`"${md5(PARTS.subarray(0, half))}"`, `"${md5(PARTS.subarray(half))}"`]);
    const bad = { 'x-amz-copy-source-range': `bytes=0-${PARTS.length}` };
    expect((await copy(`HELD/joined.bin?partNumber=3&uploadId=${uploadId}`, 'DEST/parts.bin', alice, bad)).code).toBe(
      'InvalidArgument',
    );
    const parts = etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`).join('');
    const body = `<CompleteMultipartUpload>${parts}</CompleteMultipartUpload>`;
    const done = await send(`HELD/joined.bin?uploadId=${uploadId}`, alice, { method: 'POST', body });
    expect(done.status, done.text).toBe(200);
    const transfer = (await transferAt('HELD', 'joined.bin'))!;
    const [file] = await s.h.db.select().from(dataFiles).where(eq(dataFiles.id, transfer.dataFileId));
    expect(md5(fs.readFileSync(file!.source))).toBe(md5(PARTS));
  });
});

import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { setOption } from '../../core/hosts/options.ts';
import { dataFiles, dataTransfers, transferHistory } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { nodeFilters } from '../../functions/transfer-methods/filters.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import { eventually, restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { type Sshd, sshdMissing, startSshd } from '../support/servers/sshd.ts';

/**
 * Puts through the API, delivered by a mover with the Node methods and filters to a real sshd:
 * what the data file, the transfer and its history record of the delivery options.
 */
const noSshd = sshdMissing();

let h: Harness;
let admin: string;
let sources: string;
let sshd: Sshd;
let mover: Mover;

beforeAll(async () => {
  if (noSshd) return;
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-options-src-')));
  h = await createHarness({ sourceRoots: [sources] });
  admin = await h.client('operator', ['.*']);
  sshd = await startSshd({ exec: true });
  mover = startMover(
    {
      ports: h.ports,
      methods: nodeTransferMethods({ fileRoots: [] }),
      sources: nodeSourceReader({ roots: [sources], hosts: [] }),
      filters: nodeFilters(),
    },
    { name: 'options', concurrency: 4, leaseMs: 5000, heartbeatMs: 500, pollMs: 40 },
  );
});
afterAll(async () => {
  await mover?.stop(5000);
  await sshd?.stop();
  await h?.close();
  if (sources) fs.rmSync(sources, { recursive: true, force: true });
});

const options = (values: Record<string, string>) =>
  Object.entries(values).reduce((text, [name, value]) => setOption(text, name, value), '');
const sftpHost = (dir: string, over: Record<string, unknown> = {}) => ({
  method: 'sftp' as const,
  host: `127.0.0.1:${sshd.port}`,
  login: sshd.user,
  passwd: sshd.password,
  dir,
  retryCount: 5,
  retryFrequency: 60_000,
  ...over,
});

let files = 0;
async function put(destination: string, content: Buffer, name = `s${++files}.txt`) {
  const file = path.join(sources, name);
  fs.writeFileSync(file, content);
  const q = new URLSearchParams({ destination, source: file, target: `day/${name}` });
  const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
  return { id: t!.id, dataFileId: r.json.id as number, target: t!.target };
}
const statusIn = (id: number, wanted: string[]) => async () => {
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id));
  return wanted.includes(t!.status) ? t : undefined;
};
const historyOf = (id: number) =>
  h.db.select().from(transferHistory).where(eq(transferHistory.transferId, id)).orderBy(transferHistory.id);
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const text = (lines: number) => Buffer.from('SYNOP 03772 line of a bulletin\n'.repeat(lines));

describe.skipIf(noSshd !== null)(`delivery options through the engine ${noSshd ?? ''}`, () => {
  it('gzip: delivers <target>.gz, records the filter name, size and checksum, sent = the filtered size', async () => {
    const dir = sshd.scratch('gzip-');
    await restoreDestination(h, admin, 'OPT_GZIP', [
      sftpHost(dir, { filterName: 'gzip', data: options({ 'sftp.md5Ext': '.md5' }) }),
    ]);
    const content = text(50_000);
    const sent = await put('OPT_GZIP', content);
    const t = await eventually(statusIn(sent.id, ['DONE', 'RETR']), 20_000, 'the gzip delivery');
    expect(t!.status).toBe('DONE');
    const arrived = fs.readFileSync(path.join(dir, `${sent.target}.gz`));
    expect(gunzipSync(arrived).equals(content)).toBe(true);
    expect(fs.existsSync(path.join(dir, sent.target))).toBe(false);
    expect(fs.readFileSync(path.join(dir, `${sent.target}.gz.md5`), 'utf8')).toBe(md5(arrived));
    const [file] = await h.db.select().from(dataFiles).where(eq(dataFiles.id, sent.dataFileId));
    expect(file).toMatchObject({
      size: content.byteLength,
      checksum: md5(content),
      filterName: 'gzip',
      filterSize: arrived.byteLength,
      filterChecksum: md5(arrived),
    });
    expect(t!.sent).toBe(arrived.byteLength);
    const history = await historyOf(sent.id);
    expect(history.at(-1)!.comment).toMatch(new RegExp(`^Sent ${arrived.byteLength} bytes from DataMover=options`));
  });

  it('ectrans.filterpattern and filterMinimumSize choose which files are filtered', async () => {
    const dir = sshd.scratch('pattern-');
    const data = options({ 'ectrans.filterpattern': '.*\\.txt', 'ectrans.filterMinimumSize': '1k' });
    await restoreDestination(h, admin, 'OPT_PATTERN', [sftpHost(dir, { filterName: 'gzip', data })]);
    const other = await put('OPT_PATTERN', text(1000), `o${++files}.bin`);
    const small = await put('OPT_PATTERN', Buffer.from('short\n'));
    const big = await put('OPT_PATTERN', text(1000));
    for (const { id } of [other, small, big]) await eventually(statusIn(id, ['DONE']), 20_000, 'DONE');
    expect(fs.existsSync(path.join(dir, other.target))).toBe(true);
    expect(fs.existsSync(path.join(dir, small.target))).toBe(true);
    expect(fs.existsSync(path.join(dir, `${big.target}.gz`))).toBe(true);
    const [plain] = await h.db.select().from(dataFiles).where(eq(dataFiles.id, other.dataFileId));
    expect(plain!.filterName).toBeNull();
  });

  it('a filter this mover cannot apply fails the attempt: STOP "Filter lz4 not supported", then RETR', async () => {
    const dir = sshd.scratch('lz4-');
    await restoreDestination(h, admin, 'OPT_LZ4', [sftpHost(dir, { filterName: 'lz4' })]);
    const sent = await put('OPT_LZ4', text(10));
    await eventually(statusIn(sent.id, ['RETR']), 20_000, 'RETR');
    const history = await historyOf(sent.id);
    const stop = history.find((r) => r.status === 'STOP');
    expect(stop?.comment).toBe('Filter lz4 not supported');
    expect(history.at(-1)!.status).toBe('RETR');
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('an unexpected sftp.execCmd exit code fails the attempt in the reference words, secrets scrubbed', async () => {
    const dir = sshd.scratch('exec-');
    const data = options({ 'sftp.execCmd': `test -z "${sshd.password}" || exit 4`, 'sftp.execCode': '0' });
    await restoreDestination(h, admin, 'OPT_EXEC', [sftpHost(dir, { data })]);
    const sent = await put('OPT_EXEC', randomBytes(2000));
    await eventually(statusIn(sent.id, ['RETR']), 20_000, 'RETR');
    const stop = (await historyOf(sent.id)).find((r) => r.status === 'STOP');
    expect(stop?.comment).toMatch(
      /^Failed to exec 'test -z "\*+" \|\| exit 4' \(Unexpected return code for exec \(0!=4\)\)$/,
    );
    expect(stop?.comment).not.toContain(sshd.password);
  });

  it('sftp.execCmd that ends with execCode: DONE', async () => {
    const dir = sshd.scratch('exec-ok-');
    await restoreDestination(h, admin, 'OPT_EXEC_OK', [
      sftpHost(dir, { data: options({ 'sftp.execCmd': 'test -s $filename' }) }),
    ]);
    const sent = await put('OPT_EXEC_OK', randomBytes(2000));
    const t = await eventually(statusIn(sent.id, ['DONE', 'RETR']), 20_000, 'the delivery');
    expect(t!.status).toBe('DONE');
  });
});

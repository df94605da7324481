import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataTransfers } from '../../db/schema.ts';
import { eventually } from '../support/engine.ts';
import type { Harness } from '../support/harness.ts';
import { type Sshd, sshdMissing, startSshd } from '../support/servers/sshd.ts';
import { sourceHostHarness, withEngine, withSourceHost } from './support.ts';

/**
 * The reference's Source host: a destination names one (`hostForSourceName`), and the sources put
 * to it are paths on that host, measured there at the put and read from there, over its transfer
 * method, at retrieval. One real sshd serves both as the Source host and as the destination's
 * dissemination host; the store is a local directory.
 */
const noSshd = sshdMissing();

let scene: Awaited<ReturnType<typeof sourceHostHarness>>;
let h: Harness;
let admin: string;
let sshd: Sshd;
let sourceDir: string;
let targetDir: string;
let sourceHostId: string;
const DESTINATION = 'FROM_SOURCE_HOST';

beforeAll(async () => {
  if (noSshd) return;
  sshd = await startSshd();
  scene = await sourceHostHarness('source-host');
  ({ h, admin } = scene);
  sourceDir = sshd.scratch('source-host-');
  targetDir = sshd.scratch('target-');
  const reach = { host: `127.0.0.1:${sshd.port}`, login: sshd.user, passwd: sshd.password };
  sourceHostId = await withSourceHost(
    h,
    admin,
    DESTINATION,
    { method: 'sftp', ...reach, dir: targetDir, nickname: 'source-host-target' },
    { method: 'sftp', ...reach, dir: sourceDir, nickname: 'source-host-source' },
  );
});
afterAll(async () => {
  await scene?.close();
  await sshd?.stop();
});

const md5 = (bytes: Buffer) => createHash('md5').update(bytes).digest('hex');

async function put(source: string, target: string) {
  const q = new URLSearchParams({ destination: DESTINATION, source, target });
  return h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
}

const transferOf = async (dataFileId: number) =>
  (await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, dataFileId)))[0]!;

describe.skipIf(noSshd !== null)(`a destination's Source host over SFTP ${noSshd ?? ''}`, () => {
  it('retrieves a path on the Source host and delivers its bytes, the RET line naming the host', async () => {
    const content = randomBytes(300_000);
    fs.writeFileSync(path.join(sourceDir, 'run00.grib'), content);
    fs.chownSync(path.join(sourceDir, 'run00.grib'), fs.statSync(sourceDir).uid, fs.statSync(sourceDir).gid);
    // Relative to the Source host's directory, as the reference reads it; no local source roots at all.
    const relative = await put('run00.grib', 'relative.grib');
    expect(relative.status, relative.text).toBe(200);
    const absolute = await put(path.join(sourceDir, 'run00.grib'), 'absolute.grib');
    expect(absolute.status, absolute.text).toBe(200);
    expect((await transferOf(relative.json.id)).status).toBe('SCHE');

    await withEngine(h, async () => {
      for (const r of [relative, absolute]) {
        await eventually(async () => ((await transferOf(r.json.id)).status === 'DONE' ? true : undefined), 30_000);
      }
    });
    expect(md5(fs.readFileSync(path.join(targetDir, 'relative.grib')))).toBe(md5(content));
    expect(md5(fs.readFileSync(path.join(targetDir, 'absolute.grib')))).toBe(md5(content));

    const ret = h.events.filter((e) => e.startsWith('RET;') && e.includes(`DataTransferId=`));
    expect(ret.length).toBeGreaterThanOrEqual(2);
    for (const line of ret) {
      expect(line).toContain(`HostId=${sourceHostId};`);
      expect(line).toContain(`HostLogin=${sshd.user};`);
      expect(line).toContain(`HostAddress=127.0.0.1:${sshd.port};`);
      expect(line).toContain('TransferProtocol=sftp');
    }
    // The password never reaches a line.
    expect(h.events.join('\n')).not.toContain(sshd.password);
  });

  it('refuses a put whose path is not on the Source host, saying so', async () => {
    const r = await put('missing.grib', 'missing.grib');
    // The reference's answer to a put it refuses, as for any source.
    expect(r.status).toBe(500);
    expect(r.json.message).toBe(
      `Source missing.grib not reachable: ${sourceDir}/missing.grib on Source host ${sourceHostId}: No such file`,
    );
    const [registered] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.target, 'missing.grib'));
    expect(registered).toBeUndefined();
  });

  it('fails the retrieval with the reason when the path is gone from the Source host', async () => {
    const file = path.join(sourceDir, 'removed.grib');
    fs.writeFileSync(file, randomBytes(10_000));
    const r = await put('removed.grib', 'removed.grib');
    expect(r.status, r.text).toBe(200);
    fs.rmSync(file);
    const before = h.events.length;
    await withEngine(h, async () => {
      await eventually(
        async () => h.events.slice(before).find((e) => e.startsWith('ERR;') && e.includes('removed.grib')),
        30_000,
        'an ERR line',
      );
    });
    const err = h.events.slice(before).find((e) => e.startsWith('ERR;') && e.includes('removed.grib'))!;
    expect(err).toContain('Retrieval failed on DataMover=source-host-retriever');
    expect(err).toContain(`${sourceDir}/removed.grib on Source host ${sourceHostId}: No such file`);
    const t = await transferOf(r.json.id);
    expect(t.status).toBe('SCHE');
    expect(fs.existsSync(path.join(targetDir, 'removed.grib'))).toBe(false);
  });
});

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { methodOptions } from '../../core/dissemination/method-options.ts';
import type { HostConnection } from '../../core/dissemination/methods.ts';
import { type SftpMethod, sftpMethod } from '../../functions/transfer-methods/sftp.ts';
import { type Sshd, sshdMissing, startSshd } from '../support/servers/sshd.ts';

/** An Acquisition host's directory listed over SFTP, entry by entry, against OpenSSH's sshd. */
const missing = sshdMissing();
const live = () => new AbortController().signal;

describe.skipIf(missing !== null)(`listing over sftp${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let sshd: Sshd;
  let method: SftpMethod;
  let host: (password?: string) => HostConnection;
  beforeAll(async () => {
    sshd = await startSshd();
    method = sftpMethod();
    host = (password = sshd.password) => ({
      hostId: 'acq',
      hostname: '127.0.0.1',
      login: sshd.user,
      password,
      directory: '',
      options: methodOptions('sftp', `127.0.0.1:${sshd.port}`, ''),
    });
  });
  afterAll(async () => {
    await method?.close();
    await sshd?.stop();
  });

  it('lists files with their size and time, directories, links as links and other entries', async () => {
    const dir = sshd.scratch('acq-');
    fs.writeFileSync(path.join(dir, 'a.grib2'), Buffer.alloc(1234));
    const time = new Date('2026-01-02T03:04:05Z');
    fs.utimesSync(path.join(dir, 'a.grib2'), time, time);
    fs.mkdirSync(path.join(dir, 'sub'));
    fs.symlinkSync('a.grib2', path.join(dir, 'link.grib2'));
    execFileSync('mkfifo', [path.join(dir, 'pipe')]);
    const entries = await method.list!(host(), dir, live());
    const byName = Object.fromEntries(entries.map((e) => [e.name, e]));
    expect(Object.keys(byName).sort()).toEqual(['a.grib2', 'link.grib2', 'pipe', 'sub']);
    expect(byName['a.grib2']).toEqual({ name: 'a.grib2', type: 'file', size: 1234, time });
    expect(byName.sub!.type).toBe('directory');
    expect(byName['link.grib2']!.type).toBe('symlink');
    expect(byName.pipe!.type).toBe('other');
  });

  it('a missing directory fails with its name; a wrong password never shows in the reason', async () => {
    await expect(method.list!(host(), '/no/such/place', live())).rejects.toThrow('No such directory /no/such/place');
    const wrong = 'not-the-password-123';
    const failure = await method.list!(host(wrong), sshd.scratch('acq-'), live()).catch((e: Error) => e);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).not.toContain(wrong);
  });

  it('an aborted listing rejects with the reason', async () => {
    const controller = new AbortController();
    controller.abort(new Error('run cut at maximumDuration'));
    await expect(method.list!(host(), sshd.scratch('acq-'), controller.signal)).rejects.toThrow('maximumDuration');
  });
});

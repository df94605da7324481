import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webdavMethod } from '../../functions/transfer-methods/webdav.ts';
import { type NginxDav, nginxAvailability, startNginxDav } from '../support/servers/nginx-dav.ts';
import { bytesOf, chunks, hostFor, md5, payload } from '../support/transfer.ts';

/** The WebDAV method's read of a Source host's file, against nginx's dav module behind Basic authentication. */
const nginx = nginxAvailability();
const never = () => new AbortController().signal;

describe.skipIf(!nginx.run)(`webdav: reading from nginx's dav module ${nginx.reason}`, () => {
  let dav: NginxDav;
  beforeAll(async () => {
    dav = await startNginxDav({ user: 'reader', password: 'pä ss!' });
  });
  afterAll(() => dav?.stop());

  const host = (password = 'pä ss!') =>
    hostFor(
      'webdav',
      { hostname: `127.0.0.1:${dav.port}`, login: 'reader', password, directory: 'products' },
      { 'webdav.scheme': 'http' },
    );

  it('reads a file with the host credentials, its size told before the bytes', async () => {
    const bytes = payload(300_000);
    await webdavMethod().send(host(), { target: 'run 12.grib', size: bytes.byteLength }, chunks(bytes), never());
    const read = await webdavMethod().fetch!(host(), '/products/run 12.grib', never());
    expect(read.size).toBe(bytes.byteLength);
    expect(md5(await bytesOf(read.stream))).toBe(md5(bytes));
  });

  it('refuses a missing path and wrong credentials with the status, never the password', async () => {
    await expect(webdavMethod().fetch!(host(), 'products/none.grib', never())).rejects.toThrow(
      `WebDAV GET http://127.0.0.1:${dav.port}/products/none.grib failed: 404`,
    );
    const refused = await webdavMethod().fetch!(host('wrong-secret'), 'products/run 12.grib', never()).catch(
      (e: Error) => e.message,
    );
    expect(refused).toContain('failed: 401');
    expect(refused).not.toContain('wrong-secret');
  });
});

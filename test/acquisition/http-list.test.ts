import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { httpMethod } from '../../functions/transfer-methods/http.ts';
import { HEADS_IN_FLIGHT } from '../../functions/transfer-methods/web-listing.ts';
import { nginxAvailability } from '../support/servers/nginx-dav.ts';
import { bytesOf } from '../support/transfer.ts';
import { LISTING_AUTH as auth, live, webListing } from './support.ts';

const md5 = (bytes: Buffer | Uint8Array) => createHash('md5').update(bytes).digest('hex');

/** An Acquisition host's directory listed over HTTP from its index page (nginx `autoindex`, an Apache-style page). */
const nginx = nginxAvailability();

/** A page as Apache's mod_autoindex writes one (FancyIndexing, HTMLTable), with links that are no entries. */
const apachePage = (port: number) => `<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2 Final//EN">
<html><head><title>Index of /apache</title></head><body>
<h1>Index of /apache</h1>
<table>
 <tr><th valign="top"><img src="/icons/blank.gif" alt="[ICO]"></th><th><a href="?C=N;O=D">Name</a></th>
 <th><a href="?C=M;O=A">Last modified</a></th><th><a href="?C=S;O=A">Size</a></th></tr>
 <tr><td valign="top"><img src="/icons/back.gif" alt="[PARENTDIR]"></td><td><a href="/">Parent Directory</a></td></tr>
 <tr><td><a href="one.bin"><img src="/icons/binary.gif" alt="[   ]"></a></td><td><a href="one.bin">one.bin</a></td></tr>
 <tr><td><a href="sub/"><img src="/icons/folder.gif" alt="[DIR]"></a></td><td><a href="sub/">sub/</a></td></tr>
 <tr><td></td><td><A HREF=two%20words.bin>two words.bin</A></td></tr>
 <tr><td></td><td><a title='not href="fake.bin"' href="a&amp;b.bin">a&amp;b.bin</a></td></tr>
 <tr><td></td><td><a href="/apache/absolute.bin">absolute.bin</a></td></tr>
 <tr><td></td><td><a href="http://127.0.0.1:${port}/apache/full.bin">full.bin</a></td></tr>
 <tr><td></td><td><a href="gone.bin">gone.bin</a> (listed, removed since)</td></tr>
 <!-- <a href="commented.bin">commented.bin</a> -->
 <tr><td></td><td><a href="../">..</a> <a href="./">.</a> <a href="#top">top</a> <a href="one.bin#x">x</a></td></tr>
 <tr><td></td><td><a href="http://other.example/apache/elsewhere.bin">elsewhere</a></td></tr>
 <tr><td></td><td><a href="//other.example/apache/protocol.bin">protocol</a> <a href="mailto:x@y">mail</a></td></tr>
 <tr><td></td><td><a href="sub/deeper.bin">deeper</a> <a href="/other/apache.bin">other</a></td></tr>
 <tr><td></td><td><a name="anchor">no href</a></td></tr>
</table>
<script>document.write('<a href="scripted.bin">')</script>
<address>Apache/2.4.62 (Debian) Server at 127.0.0.1 Port ${port}</address>
</body></html>
`;

describe.skipIf(!nginx.run)(`listing over http ${nginx.reason}`, () => {
  const method = httpMethod();
  const web = webListing(method);
  const { plant } = web;
  const host = (options?: Record<string, string>, password?: string, port?: number) =>
    web.host('http', options, password, port);
  const names = (entries: { name: string }[]) => entries.map((e) => e.name).sort();

  it('lists what an nginx index links to: files with their size and time from HEAD, directories', async () => {
    const byName = await web.listedInDir((directory) => method.list!(host(), directory, live()), 'b & c é?.bin');
    expect(byName.sub).toEqual({ name: 'sub', type: 'directory', size: null, time: null });
    const heads = () => web.server.requests().filter((r) => r.method === 'HEAD');
    await expect.poll(() => heads().map((r) => r.path)).toContain('/in/d%20ir/b%20%26%20c%20%C3%A9%3F.bin');
  });

  it('what it lists is read back by fetch at `<directory>/<name>`; the root lists too', async () => {
    plant('read/x/read me.bin', 'the bytes');
    const [entry] = await method.list!(host(), 'read/x', live());
    expect(entry).toMatchObject({ name: 'read me.bin', type: 'file', size: 9 });
    const { stream } = await method.fetch!(host(), `read/x/${entry!.name}`, live());
    expect(md5(await bytesOf(stream))).toBe(md5(Buffer.from('the bytes')));
    expect(names(await method.list!(host(), '', live()))).toContain('read');
  });

  it('reads an Apache-style page: its direct children each once, a file gone by its HEAD left out', async () => {
    // There, but not linked as entries: a quoted value, a comment, a script.
    const unlinked = ['fake.bin', 'commented.bin', 'scripted.bin'];
    for (const name of ['one.bin', 'two words.bin', 'a&b.bin', 'absolute.bin', 'full.bin', ...unlinked]) {
      plant(`apache/${name}`, name);
    }
    plant('apache/sub/deeper.bin', 'deeper');
    // nginx serves a directory's index.html in place of its own index.
    plant('apache/index.html', apachePage(web.server.port));
    const entries = await method.list!(host(), 'apache', live());
    expect(names(entries)).toEqual(['a&b.bin', 'absolute.bin', 'full.bin', 'one.bin', 'sub', 'two words.bin']);
    expect(entries.find((e) => e.name === 'two words.bin')).toMatchObject({ type: 'file', size: 13 });
    expect(entries.find((e) => e.name === 'sub')!.type).toBe('directory');
  });

  it('asks for at most 8 files at once', async () => {
    for (let i = 0; i < 20; i++) plant(`many/f${i}.bin`, 'x'.repeat(i));
    let inFlight = 0;
    let most = 0;
    const counting: typeof fetch = async (input, init) => {
      if (init?.method !== 'HEAD') return fetch(input, init);
      most = Math.max(most, ++inFlight);
      try {
        return await fetch(input, init);
      } finally {
        inFlight--;
      }
    };
    const entries = await httpMethod({ fetch: counting }).list!(host(), 'many', live());
    expect(entries.length).toBe(20);
    expect(entries.find((e) => e.name === 'f7.bin')!.size).toBe(7);
    expect(HEADS_IN_FLIGHT).toBe(8);
    expect(most).toBe(HEADS_IN_FLIGHT);
  });

  it('a missing directory fails with its name; a wrong password never shows in the reason', async () => {
    await web.failsWithoutSecrets(
      (directory, password) => method.list!(host({}, password), directory, live()),
      /^Cannot list in \(HTTP GET http:\/\/127\.0\.0\.1:\d+\/in\/ .*401/,
    );
  });

  it('an aborted listing rejects with the reason, at once when it waits for the server', async () => {
    await web.listingAborts((signal, port) => method.list!(host({}, auth.password, port), 'in', signal));
  });
});

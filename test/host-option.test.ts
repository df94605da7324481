import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isServiceError } from '../core/common/errors.ts';
import { END_OF_PROPERTIES, readOptions, setOption, splitOptionName } from '../core/hosts/options.ts';
import { createHarness, type Harness } from './support/harness.ts';

const MARKER = '###### END-OF-PROPERTIES ######';

describe('setOption', () => {
  it('uses the marker of the reference server', () => {
    expect(END_OF_PROPERTIES).toBe(MARKER);
  });

  it('adds the first option to empty data', () => {
    expect(setOption('', 'ftp.port', '21')).toBe('ftp.port = "21"');
  });

  it('inserts a new line in sorted position', () => {
    const data = 'a.one = "1"\nc.three = "3"';
    expect(setOption(data, 'b.two', '2')).toBe('a.one = "1"\nb.two = "2"\nc.three = "3"');
    expect(setOption(data, 'A.zero', '0')).toBe('A.zero = "0"\na.one = "1"\nc.three = "3"');
    expect(setOption(data, 'd.four', '4')).toBe('a.one = "1"\nc.three = "3"\nd.four = "4"');
    expect(setOption(data, 'a.one2', 'x')).toBe('a.one = "1"\na.one2 = "x"\nc.three = "3"');
  });

  it('replaces the line of an existing option and nothing else', () => {
    const data = 'ftp.passive = "yes"\nftp.port = "21"\nftp.timeout = "60"\n';
    expect(setOption(data, 'ftp.port', '2121')).toBe('ftp.passive = "yes"\nftp.port = "2121"\nftp.timeout = "60"\n');
  });

  it('recognises an existing option written with odd spacing', () => {
    const data = '  ftp.port   =   "21"  \nftp.zzz="1"';
    expect(setOption(data, 'ftp.port', '22')).toBe('ftp.port = "22"\nftp.zzz="1"');
    expect(setOption(data, 'ftp.zzz', '2')).toBe('  ftp.port   =   "21"  \nftp.zzz = "2"');
  });

  it('keeps comments, blank lines, odd spacing and the trailing newline byte for byte', () => {
    const data = '# header comment\n\n  b.odd\t=  "x"   \n# c.commented = "no"\nd.last = "4"\n';
    const out = setOption(data, 'c.new', 'v');
    // Right before the first option that sorts after it.
    expect(out).toBe('# header comment\n\n  b.odd\t=  "x"   \n# c.commented = "no"\nc.new = "v"\nd.last = "4"\n');
    // The commented-out line is not an option: setting its name adds a line, the comment stays.
    expect(setOption(data, 'c.commented', 'yes')).toContain('# c.commented = "no"\n');
    expect(setOption(data, 'c.commented', 'yes')).toContain('c.commented = "yes"\n');
    // Without a trailing newline none is added.
    expect(setOption('a.x = "1"', 'b.y', '2')).toBe('a.x = "1"\nb.y = "2"');
  });

  it('keeps CRLF line ends of the lines it does not touch', () => {
    const data = 'a.x = "1"\r\nc.z = "3"\r\n';
    expect(setOption(data, 'b.y', '2')).toBe('a.x = "1"\r\nb.y = "2"\nc.z = "3"\r\n');
  });

  it('never touches anything from the END-OF-PROPERTIES line on', () => {
    const tail = `${MARKER}\nz.after = "script"\n#!/bin/sh\necho "a.x = 1"  \n\n`;
    const data = `a.x = "1"\nm.y = "2"\n${tail}`;
    expect(setOption(data, 'z.after', 'new')).toBe(`a.x = "1"\nm.y = "2"\nz.after = "new"\n${tail}`);
    expect(setOption(data, 'a.x', 'changed')).toBe(`a.x = "changed"\nm.y = "2"\n${tail}`);
    expect(setOption(data, 'b.b', 'v')).toBe(`a.x = "1"\nb.b = "v"\nm.y = "2"\n${tail}`);
    // Marker first: every option goes before it.
    expect(setOption(`${MARKER}\nscript`, 'a.b', 'c')).toBe(`a.b = "c"\n${MARKER}\nscript`);
  });

  it('escapes quotes, backslashes and line breaks in values', () => {
    expect(setOption('', 'm.k', 'say "hi"')).toBe('m.k = "say \\"hi\\""');
    expect(setOption('', 'm.k', 'C:\\dir\\')).toBe('m.k = "C:\\\\dir\\\\"');
    expect(setOption('', 'm.k', 'line1\nline2\r\nline3')).toBe('m.k = "line1\\nline2\\r\\nline3"');
    expect(setOption('', 'm.k', '\\"')).toBe('m.k = "\\\\\\""');
    // A value can never add a line or the marker.
    const injected = setOption('a.a = "1"', 'm.k', `x"\n${MARKER}\nevil.k = "1`);
    expect(injected.split('\n')).toHaveLength(2);
    expect(injected.split('\n').some((l) => l.trim() === MARKER)).toBe(false);
    expect(setOption('', 'm.k', 'unicode é ✓ ')).toBe('m.k = "unicode é ✓ "');
  });

  it('replaces every line of a value spanning lines, and never inserts inside one', () => {
    // PEM lines end in '=' padding: inside a quoted value they are no option of their own.
    const key = 'sftp.privateKey = "-----BEGIN KEY-----\nAb+c/Z==\nzz.a = x\n-----END KEY-----"';
    const data = `a.x = "1"\n${key}\nz.z = "9"\n`;
    expect(setOption(data, 'sftp.privateKey', 'new')).toBe('a.x = "1"\nsftp.privateKey = "new"\nz.z = "9"\n');
    expect(setOption(data, 'zz.a', 'v')).toBe(`a.x = "1"\n${key}\nz.z = "9"\nzz.a = "v"\n`);
    expect(readOptions(setOption(data, 'b.b', 'v')).get('sftp.privateKey')).toBe(
      '-----BEGIN KEY-----\nAb+c/Z==\nzz.a = x\n-----END KEY-----',
    );
  });

  it('writes one line for a name written twice, and finds a name written with spaces', () => {
    expect(setOption('m.k = "1"\nn.n = "2"\nm.k = "3"', 'm.k', '4')).toBe('m.k = "4"\nn.n = "2"');
    expect(setOption('sftp .port = "22"\n', 'sftp.port', '2222')).toBe('sftp.port = "2222"\n');
  });

  it('ends an unclosed quoted value at the END-OF-PROPERTIES line', () => {
    const data = `a.open = "never closed\nb.b = 2\n${MARKER}\nscript "\n`;
    expect(Object.fromEntries(readOptions(data))).toEqual({ 'a.open': 'never closed\nb.b = 2' });
    expect(setOption(data, 'a.open', 'shut')).toBe(`a.open = "shut"\n${MARKER}\nscript "\n`);
  });

  it('splits the name at the first dot', () => {
    expect(splitOptionName('ectrans.hostSelector.rule')).toEqual({ module: 'ectrans', key: 'hostSelector.rule' });
    expect(setOption('ectrans.hostSelector = "x"', 'ectrans.hostSelector.rule', 'y')).toBe(
      'ectrans.hostSelector = "x"\nectrans.hostSelector.rule = "y"',
    );
  });

  it.each(['nodot', '', '.key', 'module.'])('refuses the malformed name %j', (name) => {
    try {
      setOption('', name, 'v');
      expect.unreachable();
    } catch (e) {
      expect(isServiceError(e) && e.message).toBe(`Malformed name: ${name}`);
    }
  });

  it.each(['a.b c', 'a.b\nevil.k', 'a.b=c', 'a.b\tc', 'a.b"c'])(
    'refuses a name that could not be read back: %j',
    (name) => {
      expect(() => setOption('x.y = "1"', name, 'v')).toThrow(`Malformed name: ${name}`);
    },
  );
});

describe('POST /v1/host/option', () => {
  let h: Harness;
  let admin: string;
  let hostid: number;
  let otherHostid: number;
  const INITIAL = `# managed\nsftp.port = "22"\nsftp.timeout = "60"\n${MARKER}\nscript line\n`;

  const post = (query: string, form?: Record<string, string>, auth = admin) =>
    h.call('POST', `/v1/host/option${query}`, { auth, form });
  const hostsOf = async (name: string) =>
    (
      await h.call('GET', `/v1/destination/backup/${name}`, { auth: admin })
    ).json.backup.destinations[0].associations.map((a: any) => a.host);
  const dataOf = async (name: string) => (await hostsOf(name))[0].data as string;
  const error = (message: string) => JSON.stringify({ status: 'error', message });

  beforeAll(async () => {
    h = await createHarness();
    admin = await h.client('admin', ['.*']);
    const body = {
      backup: {
        destinations: [
          {
            destination: { name: 'OPT_DEST', countryIso: 'gb', type: 1 },
            associations: [{ priority: 0, host: { hostid: 1, nickname: 'opt-host', data: INITIAL } }],
          },
          {
            destination: { name: 'OPT_OTHER', countryIso: 'gb', type: 1 },
            associations: [{ priority: 0, host: { hostid: 2, nickname: 'opt-other', data: 'sftp.port = "22"' } }],
          },
        ],
      },
    };
    expect((await h.call('PUT', '/v1/destination/backup', { auth: admin, body })).status).toBe(200);
    hostid = (await hostsOf('OPT_DEST'))[0].hostid;
    otherHostid = (await hostsOf('OPT_OTHER'))[0].hostid;
  });
  afterAll(() => h.close());

  it('upserts one option line and keeps the rest of the data', async () => {
    const r = await post(`?hostid=${hostid}&name=sftp.port`, { value: '2222' });
    expect([r.status, r.text]).toEqual([200, '{"status":"ok"}']);
    expect(await dataOf('OPT_DEST')).toBe(
      `# managed\nsftp.port = "2222"\nsftp.timeout = "60"\n${MARKER}\nscript line\n`,
    );
    expect((await post(`?hostid=${hostid}&name=sftp.password`, { value: 'tok "en"\\x' })).status).toBe(200);
    expect(await dataOf('OPT_DEST')).toBe(
      '# managed\nsftp.password = "tok \\"en\\"\\\\x"\n' +
        `sftp.port = "2222"\nsftp.timeout = "60"\n${MARKER}\nscript line\n`,
    );
    expect(await dataOf('OPT_OTHER')).toBe('sftp.port = "22"');
  });

  it('accepts a host id with a sign and a value with spaces and a new line', async () => {
    expect((await post(`?hostid=%2B${otherHostid}&name=ectrans.note`, { value: ' two\nlines ' })).status).toBe(200);
    expect(await dataOf('OPT_OTHER')).toBe('ectrans.note = " two\\nlines "\nsftp.port = "22"');
  });

  it('answers Host <id> not found for an unknown host', async () => {
    const r = await post('?hostid=987654&name=a.b', { value: 'v' });
    expect([r.status, r.text]).toEqual([500, error('Host 987654 not found')]);
  });

  it('answers Malformed name for a name without a dot and changes nothing', async () => {
    const before = await dataOf('OPT_OTHER');
    const r = await post(`?hostid=${otherHostid}&name=nodot`, { value: 'v' });
    expect([r.status, r.text]).toEqual([500, error('Malformed name: nodot')]);
    const injected = await post(`?hostid=${otherHostid}&name=${encodeURIComponent('a.b\nevil.x')}`, { value: 'v' });
    expect(injected.status).toBe(500);
    expect(injected.json.message).toMatch(/^Malformed name: /);
    expect(await dataOf('OPT_OTHER')).toBe(before);
  });

  it('412 for a missing or blank parameter', async () => {
    expect([
      (await post(`?hostid=${hostid}&name=a.b`)).status,
      (await post(`?hostid=${hostid}&name=a.b`)).text,
    ]).toEqual([412, 'Missing parameter: value']);
    expect((await post(`?hostid=${hostid}&name=a.b`, { value: '' })).text).toBe('Missing parameter: value');
    expect((await post('?name=a.b', { value: 'v' })).text).toBe('Missing parameter: hostid');
    expect((await post(`?hostid=${hostid}`, { value: 'v' })).text).toBe('Missing parameter: name');
  });

  it('400 for a host id that is not an integer', async () => {
    for (const bad of ['abc', '1.5', '12x']) {
      const r = await post(`?hostid=${bad}&name=a.b`, { value: 'v' });
      expect([r.status, r.text]).toEqual([400, `Invalid value for parameter hostid: '${bad}' (integer expected)`]);
    }
  });

  it('400 for a body that is not form fields', async () => {
    const r = await h.call('POST', `/v1/host/option?hostid=${hostid}&name=a.b`, { auth: admin, body: { value: 'v' } });
    expect(r.status).toBe(400);
  });

  it('needs the updateHostOption permission', async () => {
    const allowed = await h.client('rotator', ['updateHostOption']);
    const denied = await h.client('reader', ['destinationBackupList|putDestinationBackup']);
    expect((await post(`?hostid=${otherHostid}&name=token.value`, { value: 'x' }, denied)).text).toBe(
      error('User not authorized'),
    );
    expect(await dataOf('OPT_OTHER')).not.toContain('token.value');
    expect((await post(`?hostid=${otherHostid}&name=token.value`, { value: 'rotated' }, allowed)).text).toBe(
      '{"status":"ok"}',
    );
    expect(await dataOf('OPT_OTHER')).toContain('token.value = "rotated"');
  });

  it('concurrent updates of one host all land', async () => {
    const names = ['c.a', 'c.b', 'c.c', 'c.d', 'c.e'];
    const replies = await Promise.all(names.map((name) => post(`?hostid=${hostid}&name=${name}`, { value: name })));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const data = await dataOf('OPT_DEST');
    for (const name of names) expect(data).toContain(`${name} = "${name}"`);
    expect(data.endsWith(`${MARKER}\nscript line\n`)).toBe(true);
  });
});

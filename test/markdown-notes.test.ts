import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importFields } from '../core/metadata/fields.ts';
import { escapeHtml, renderMarkdown } from '../core/metadata/markdown.ts';
import type { MetadataField } from '../core/metadata/model.ts';
import { buildNoteHtml } from '../core/metadata/note-html.ts';
import { httpNotePublisher, noteOf } from '../core/metadata/notes.ts';
import { createHarness, type Harness } from './support/harness.ts';

const SAFE_TAGS = new Set([
  'p',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'strong',
  'em',
  'ul',
  'ol',
  'li',
  'a',
  'code',
  'pre',
  'table',
  'thead',
  'tbody',
  'tr',
  'th',
  'td',
  'blockquote',
  'hr',
  'br',
  'dl',
  'dt',
  'dd',
]);
const SAFE_ATTRIBUTES = new Set(['href', 'title', 'align', 'class', 'start']);

/** What a browser would make of an attribute value: entities decoded, tabs and line breaks dropped, ends trimmed. */
function browserValue(raw: string) {
  const decoded = raw
    .replace(/&#x([0-9a-f]+);?/gi, (_, hex: string) => String.fromCodePoint(parseInt(hex, 16)))
    .replace(/&#([0-9]+);?/g, (_, dec: string) => String.fromCodePoint(Number(dec)))
    .replace(
      /&(quot|lt|gt|apos|colon|tab|newline);/gi,
      (_, n: string) =>
        ({ quot: '"', lt: '<', gt: '>', apos: "'", colon: ':', tab: '\t', newline: '\n' })[n.toLowerCase()]!,
    )
    .replace(/&amp;/g, '&');
  return decoded.replace(/[\t\n\r]/g, '').replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '');
}

/** Fails unless every tag is in the safe subset, with only safe attributes and http(s)/mailto (or relative) links. */
function expectSafe(html: string) {
  expect(html).not.toMatch(/<script/i);
  expect(html).not.toMatch(/<img/i);
  for (const [, tag, attributes] of html.matchAll(/<\/?([^\s>/]+)([^>]*)>/g)) {
    expect(SAFE_TAGS, `tag <${tag}> in ${html}`).toContain(tag!.toLowerCase());
    const consumed = [...attributes!.matchAll(/\s+([^\s="'<>/]+)="([^"]*)"/g)];
    expect(
      consumed
        .map((m) => m[0])
        .join('')
        .trim(),
      `attributes of <${tag}> in ${html}`,
    ).toBe(attributes!.replace(/\s*\/$/, '').trim());
    for (const [, name, value] of consumed) {
      expect(name!.toLowerCase()).not.toMatch(/^on/);
      expect(SAFE_ATTRIBUTES, `attribute ${name} in ${html}`).toContain(name!.toLowerCase());
      if (name!.toLowerCase() === 'href') {
        const scheme = /^([^/?#:]*):/.exec(browserValue(value!))?.[1];
        if (scheme !== undefined)
          expect(['http', 'https', 'mailto'], `href ${value} in ${html}`).toContain(scheme.toLowerCase());
      }
    }
  }
}

const XSS = [
  '<script>alert(1)</script>',
  'text <script>alert(1)</script> more',
  '<SCRIPT SRC=//evil.example/x.js></SCRIPT>',
  '<scr<script>ipt>alert(1)</script>',
  '<img src=x onerror=alert(1)>',
  '<IMG SRC="javascript:alert(1)">',
  '<svg onload=alert(1)>',
  '<div onclick="alert(1)">click</div>',
  '<a href="javascript:alert(1)">x</a>',
  '<iframe src="//evil.example"></iframe>',
  '<style>body{background:url(javascript:alert(1))}</style>',
  '<p style="x:expression(alert(1))">p</p>',
  '<!-- <script>alert(1)</script> -->',
  '<details open ontoggle=alert(1)>',
  '<body onload=alert(1)>',
  '<input autofocus onfocus=alert(1)>',
  '<div>\n\n**inside html block**\n\n</div>',
  'inline <b onmouseover="alert(1)">bold</b> html',
  '<math><mtext><script>alert(1)</script>',
  '![img](http://evil.example/x.png)',
  '![img](javascript:alert(1))',
  '![x][ref]\n\n[ref]: http://evil.example/x.png',
  '![x](http://a.example/x.png "onerror=alert(1)")',
  '[![x](http://a.example/i.png)](http://a.example)',
  '[x](javascript:alert(1))',
  '[x](JaVaScRiPt:alert(1))',
  '[x](JAVASCRIPT:alert(1))',
  '[x](  javascript:alert(1)  )',
  '[x](<javascript:alert(1)>)',
  '[x](jav&#x61;script:alert(1))',
  '[x](&#106;avascript:alert(1))',
  '[x](&#x6A;&#x61;&#x76;&#x61;&#x73;&#x63;&#x72;&#x69;&#x70;&#x74;&#x3A;alert(1))',
  '[x](java&Tab;script:alert(1))',
  '[x](java&NewLine;script:alert(1))',
  '[x](javascript&colon;alert(1))',
  '[x](javascript&#58;alert(1))',
  '[x](javascript&#0000058alert(1))',
  '[x](&#x6A&#x61&#x76&#x61&#x73&#x63&#x72&#x69&#x70&#x74&#x3A;alert(1))',
  '[x](%6Aavascript:alert(1))',
  '[x](\\javascript:alert(1))',
  '[x](java\\script:alert(1))',
  '[x](java%0Ascript:alert(1))',
  '[x](&#x20;javascript:alert(1))',
  '[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)',
  '[x](DATA:text/html,<script>alert(1)</script>)',
  '[x](vbscript:msgbox(1))',
  '[x](VbScRiPt:msgbox(1))',
  '[x](file:///etc/passwd)',
  '[x](irc://irc.example/x)',
  '[x](xmpp:a@b.example)',
  '[x][r]\n\n[r]: javascript:alert(1)',
  '[x][r]\n\n[r]: <data:text/html,x> "t"',
  '[x](http://a.example "t\\" onmouseover=\\"alert(1)")',
  '<javascript:alert(1)>',
  '<JAVASCRIPT:alert(1)>',
  '<data:text/html,<script>alert(1)</script>>',
  '<vbscript:msgbox(1)>',
  '<http://a.example/?q="><script>alert(1)</script>>',
  '**bold <script>alert(1)</script>**',
  '*[x](javascript:alert(1))*',
  '[[x](javascript:alert(1))](http://a.example)',
  '[<img src=x onerror=alert(1)>](http://a.example)',
  '[x](http://a.example)<img src=x>',
  '| a | b |\n|---|---|\n| <script>alert(1)</script> | [x](javascript:alert(1)) |',
  '- item <img src=x onerror=alert(1)>\n- [y](vbscript:x)',
  '> <script>alert(1)</script>',
  '# <script>alert(1)</script>',
  '```"onmouseover=alert(1)\ncode\n```',
  '```js" onclick="alert(1)\nx\n```',
  '`<script>alert(1)</script>`',
  '    <script>alert(1)</script>',
  '\\<script>alert(1)\\</script>',
  '&lt;script&gt;alert(1)&lt;/script&gt;',
  '<a href="http://ok.example" onclick="alert(1)">x</a>',
  '<a\nhref="javascript:alert(1)">x</a>',
  '<</script>script>alert(1)<</script>/script>',
];

describe('renderMarkdown: XSS corpus', () => {
  it.each(XSS)('%j renders to the safe subset', (source) => {
    const html = renderMarkdown(source);
    expectSafe(html);
  });

  it('keeps the text of refused links and HTML visible, escaped', () => {
    expect(renderMarkdown('[click](javascript:alert(1))')).toBe('<p><a href="">click</a></p>');
    expect(renderMarkdown('<b>x</b>')).toBe('<p>&lt;b&gt;x&lt;/b&gt;</p>');
    expect(renderMarkdown('![alt](http://a.example/i.png)')).toBe('<p>!<a href="http://a.example/i.png">alt</a></p>');
  });

  it('the checker itself catches what it must', () => {
    expect(() => expectSafe('<p><a href="javascript:alert(1)">x</a></p>')).toThrow();
    expect(() => expectSafe('<p><a href="jav&#x61;script:x">x</a></p>')).toThrow();
    expect(() => expectSafe('<p><a href="https://a" onclick="x">x</a></p>')).toThrow();
    expect(() => expectSafe('<img src="x">')).toThrow();
    expect(() => expectSafe('<p><a href=javascript:x>x</a></p>')).toThrow();
    expect(() => expectSafe('<p title="onclick=x"><a href="/rel">x</a></p>')).not.toThrow();
  });
});

describe('renderMarkdown: the safe subset renders', () => {
  it('headings, emphasis, lists, quotes', () => {
    expect(renderMarkdown('# Title\n\n### Sub')).toBe('<h1>Title</h1>\n<h3>Sub</h3>');
    expect(renderMarkdown('**bold**, *it*, _it_ and ***both***')).toBe(
      '<p><strong>bold</strong>, <em>it</em>, <em>it</em> and <em><strong>both</strong></em></p>',
    );
    expect(renderMarkdown('- a\n- b')).toBe('<ul>\n<li>a</li>\n<li>b</li>\n</ul>');
    expect(renderMarkdown('1. one\n2. two')).toBe('<ol>\n<li>one</li>\n<li>two</li>\n</ol>');
    expect(renderMarkdown('> quoted')).toBe('<blockquote>\n<p>quoted</p>\n</blockquote>');
  });

  it('http, https, mailto and relative links; autolinks', () => {
    expect(
      renderMarkdown('[a](http://a.example/x) [b](HTTPS://b.example/?x=1&y=2) [c](mailto:ops@c.example) [d](/docs#x)'),
    ).toBe(
      '<p><a href="http://a.example/x">a</a> <a href="HTTPS://b.example/?x=1&amp;y=2">b</a> ' +
        '<a href="mailto:ops@c.example">c</a> <a href="/docs#x">d</a></p>',
    );
    expect(renderMarkdown('<https://e.example> <ops@e.example>')).toBe(
      '<p><a href="https://e.example">https://e.example</a> <a href="mailto:ops@e.example">ops@e.example</a></p>',
    );
    expect(renderMarkdown('[t](https://a.example "Title")')).toBe(
      '<p><a href="https://a.example" title="Title">t</a></p>',
    );
  });

  it('code spans and fenced code, escaped', () => {
    expect(renderMarkdown('Use `a < b` here')).toBe('<p>Use <code>a &lt; b</code> here</p>');
    expect(renderMarkdown('```js\nif (a < b) x();\n```')).toBe(
      '<pre><code class="language-js">if (a &lt; b) x();\n</code></pre>',
    );
  });

  it('GFM tables with alignment and inline markup', () => {
    const html = renderMarkdown('| Left | Mid | Right |\n|:--|:-:|--:|\n| a | **b** | `c` |');
    expect(html).toBe(
      '<table>\n<thead>\n<tr>\n<th align="left">Left</th>\n<th align="center">Mid</th>\n' +
        '<th align="right">Right</th>\n</tr>\n</thead>\n' +
        '<tbody>\n<tr>\n<td align="left">a</td>\n<td align="center"><strong>b</strong></td>\n' +
        '<td align="right"><code>c</code></td>\n</tr>\n</tbody>\n</table>',
    );
    expectSafe(html);
  });

  it('escapeHtml escapes the five characters', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});

const field = (over: Partial<MetadataField>): MetadataField => ({
  id: 1,
  name: 'f',
  label: 'F',
  type: 'text',
  category: 'General',
  tooltip: null,
  defaultValue: null,
  editable: true,
  maxOccurs: 1,
  position: 0,
  active: true,
  ...over,
});

describe('buildNoteHtml', () => {
  it('one <h3> per category, label and value per field, password fields never', () => {
    const html = buildNoteHtml([
      { field: field({ name: 'a', label: 'Alpha', category: 'One' }), value: 'first' },
      { field: field({ name: 'pw', label: 'Secret', type: 'password', category: 'One' }), value: 'hunter2' },
      { field: field({ name: 'b', label: 'Beta', category: 'Two', type: 'markdown' }), value: '**bold**' },
      { field: field({ name: 'c', label: 'Gamma', category: 'One', type: 'textarea' }), value: 'l1\nl2' },
    ]);
    expect(html).toBe(
      '<h3>One</h3><dl><dt>Alpha</dt><dd><p>first</p></dd><dt>Gamma</dt><dd><p>l1<br>l2</p></dd></dl>' +
        '<h3>Two</h3><dl><dt>Beta</dt><dd><p><strong>bold</strong></p></dd></dl>',
    );
    expect(html).not.toContain('hunter2');
    expect(html).not.toContain('Secret');
    expect(buildNoteHtml([{ field: field({ type: 'password' }), value: 'x' }])).toBe('');
  });

  it('escapes every value that is not Markdown, and labels and categories', () => {
    const html = buildNoteHtml([
      { field: field({ label: '<i>L</i>', category: 'R&D <x>' }), value: '<script>alert(1)</script> & "q" **not md**' },
      {
        field: field({ name: 'u', label: 'U', category: 'R&D <x>', type: 'url' }),
        value: 'https://a.example/?a=1&b="2"',
      },
      {
        field: field({ name: 'c', label: 'C', category: 'R&D <x>', type: 'contact' }),
        value: { name: '<b>Duty</b>', email: 'd@x.example', phone: null, fax: '' },
      },
      {
        field: field({ name: 'm', label: 'M', category: 'R&D <x>', type: 'email', maxOccurs: -1 }),
        value: ['a@x.example', '<b@x.example>'],
      },
    ]);
    expect(html).toContain('<h3>R&amp;D &lt;x&gt;</h3>');
    expect(html).toContain('<dt>&lt;i&gt;L&lt;/i&gt;</dt>');
    expect(html).toContain('<p>&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot; **not md**</p>');
    expect(html).toContain('<p>https://a.example/?a=1&amp;b=&quot;2&quot;</p>');
    expect(html).toContain('<p>name: &lt;b&gt;Duty&lt;/b&gt;<br>email: d@x.example</p>');
    expect(html).toContain('<dd><p>a@x.example</p><p>&lt;b@x.example&gt;</p></dd>');
    expectSafe(html);
  });
});

describe('notes of a destination', () => {
  let h: Harness;
  let admin: string;
  const FIELDS = [
    { name: 'summary', label: 'Summary', type: 'markdown', category: 'General', position: 1 },
    { name: 'remark', label: 'Remark', type: 'text', category: 'General', position: 2 },
    { name: 'hidden', label: 'Not flagged', type: 'text', category: 'General', position: 3 },
    {
      name: 'policy',
      label: 'Policy',
      type: 'text',
      category: 'General',
      position: 4,
      defaultValue: 'Locked <policy>',
      editable: false,
    },
    { name: 'contact', label: 'Contact', type: 'contact', category: 'Contacts', position: 1 },
    { name: 'token', label: 'Token', type: 'password', category: 'Access', position: 1 },
  ];
  const putMetadata = (name: string) =>
    h.call('PUT', `/v1/destination/${name}/metadata`, {
      auth: admin,
      body: {
        metadata: {
          General: {
            summary: '## Hi\n\n<script>alert(1)</script> [x](javascript:alert(1))',
            remark: '<b>r</b>',
            hidden: 'invisible value',
          },
          Contacts: { contact: { name: 'Duty', email: 'duty@x.example', phone: null, fax: null } },
          Access: { token: 'super-secret-token' },
        },
        includeInNotes: {
          General: { summary: true, remark: true, policy: true },
          Contacts: { contact: true },
          Access: { token: true },
        },
      },
    });

  beforeAll(async () => {
    h = await createHarness();
    admin = await h.client('admin', ['.*']);
    await importFields(h.ports, 'test', FIELDS);
    for (const name of ['NOTE_A', 'NOTE_PUSH', 'NOTE_FAIL', 'NOTE_FLAKY', 'NOTE_DOWN']) await h.addDestination(name);
  });
  afterAll(() => h.close());

  it('noteOf holds the flagged fields only, never password fields even when flagged', async () => {
    expect((await putMetadata('NOTE_A')).status).toBe(200);
    const note = await noteOf(h.ports, 'NOTE_A');
    expect(note).toBe(
      '<h3>Contacts</h3><dl><dt>Contact</dt><dd><p>name: Duty<br>email: duty@x.example</p></dd></dl>' +
        '<h3>General</h3><dl><dt>Summary</dt><dd><h2>Hi</h2>\n' +
        '<p>&lt;script&gt;alert(1)&lt;/script&gt; <a href="">x</a></p></dd>' +
        '<dt>Remark</dt><dd><p>&lt;b&gt;r&lt;/b&gt;</p></dd><dt>Policy</dt><dd><p>Locked &lt;policy&gt;</p></dd></dl>',
    );
    expect(note).not.toContain('super-secret-token');
    expect(note).not.toContain('Token');
    expect(note).not.toContain('invisible value');
    expectSafe(note);
  });

  async function receiver(statusOf: (n: number) => number) {
    const requests: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }> = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        requests.push({ method: req.method!, url: req.url!, headers: req.headers, body });
        res.statusCode = statusOf(requests.length);
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { url, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
  }
  const pushFailures = () => h.logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'note push failed');

  it('a metadata PUT pushes the note: PUT /<destination>, {"note": html}, Bearer token', async () => {
    const r = await receiver(() => 200);
    h.ports.notes = httpNotePublisher(r.url, 'tok');
    try {
      const put = await putMetadata('NOTE_PUSH');
      expect(put.status).toBe(200);
      await h.settle();
      expect(r.requests).toHaveLength(1);
      const [req] = r.requests;
      expect(req!.method).toBe('PUT');
      expect(req!.url).toBe('/NOTE_PUSH');
      expect(req!.headers.authorization).toBe('Bearer tok');
      expect(req!.headers['content-type']).toMatch(/^application\/json/);
      expect(JSON.parse(req!.body)).toEqual({ note: await noteOf(h.ports, 'NOTE_PUSH') });
      expect(JSON.parse(req!.body).note).toContain('<h3>General</h3>');
    } finally {
      h.ports.notes = null;
      await r.close();
    }
  });

  it('a failing receiver is retried once; the failure is logged with the request id; the call succeeds', async () => {
    const r = await receiver(() => 503);
    h.ports.notes = httpNotePublisher(r.url, 'tok');
    try {
      const before = pushFailures().length;
      const put = await putMetadata('NOTE_FAIL');
      expect(put.status).toBe(200);
      expect(put.json.success).toBe('yes');
      await h.settle();
      expect(r.requests.map((q) => `${q.method} ${q.url}`)).toEqual(['PUT /NOTE_FAIL', 'PUT /NOTE_FAIL']);
      const failures = pushFailures().slice(before);
      expect(failures).toHaveLength(2);
      for (const f of failures) {
        expect(f.requestId).toBe(put.headers.get('x-request-id'));
        expect(f.destination).toBe('NOTE_FAIL');
        expect(f.reason).toContain('503');
      }
    } finally {
      h.ports.notes = null;
      await r.close();
    }
  });

  it('a receiver that fails once gets the note on the retry', async () => {
    const r = await receiver((n) => (n === 1 ? 500 : 204));
    h.ports.notes = httpNotePublisher(r.url, 'tok');
    try {
      const before = pushFailures().length;
      const put = await putMetadata('NOTE_FLAKY');
      expect(put.status).toBe(200);
      await h.settle();
      expect(r.requests).toHaveLength(2);
      expect(r.requests[1]!.body).toBe(r.requests[0]!.body);
      expect(pushFailures().slice(before)).toHaveLength(1);
    } finally {
      h.ports.notes = null;
      await r.close();
    }
  });

  it('an unreachable receiver does not fail the call either', async () => {
    const r = await receiver(() => 200);
    await r.close();
    h.ports.notes = httpNotePublisher(r.url, 'tok');
    try {
      const before = pushFailures().length;
      const put = await putMetadata('NOTE_DOWN');
      expect(put.status).toBe(200);
      await h.settle();
      const failures = pushFailures().slice(before);
      expect(failures).toHaveLength(2);
      expect(failures[0].requestId).toBe(put.headers.get('x-request-id'));
    } finally {
      h.ports.notes = null;
    }
  });
});

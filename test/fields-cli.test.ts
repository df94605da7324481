import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../core/system/demo.ts';
import { parseConfig } from '../functions/node/config.ts';
import { openRuntime } from '../functions/node/runtime.ts';
import { runMain } from './support/in-process.ts';

/** The command line as an operator runs it, through main() in this process, on the embedded database of a temp dir. */
const temp = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-cli-'));
afterAll(() => fs.rmSync(temp, { recursive: true, force: true }));

/** Only the data dir: no DATABASE_URL, key, notes service or event log of the test run. */
async function cli(dataDir: string, ...args: string[]) {
  const r = await runMain(args, { env: { ECPDS_DATA_DIR: dataDir } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
let files = 0;
function file(content: unknown) {
  const name = path.join(temp, `fields-${++files}.json`);
  fs.writeFileSync(name, typeof content === 'string' ? content : JSON.stringify(content));
  return name;
}
const LONG = 120_000; // each command opens the embedded database

const DEFINITIONS = [
  { name: 'summary', label: 'Summary', type: 'markdown', category: 'General', position: 1 },
  {
    name: 'escalation',
    label: 'Escalation',
    type: 'email',
    category: 'Contacts',
    maxOccurs: -1,
    tooltip: 'Who to call',
  },
  { name: 'token', label: 'Token', type: 'password', category: 'Access', defaultValue: 'pw-default', editable: false },
];
const full = (d: Record<string, unknown>) => ({
  tooltip: null,
  defaultValue: null,
  editable: true,
  maxOccurs: 1,
  position: 0,
  active: true,
  ...d,
});
// Export order: category, then position, then name. Password defaults stay out of the file.
const EXPORTED = [full({ ...DEFINITIONS[2], defaultValue: null }), full(DEFINITIONS[1]!), full(DEFINITIONS[0]!)];

describe('fields import / export', () => {
  const dir = path.join(temp, 'fields');
  const exported = async () => {
    const r = await cli(dir, 'fields', 'export');
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout);
  };

  it(
    'starts empty, imports new definitions and exports them in the import format',
    async () => {
      expect(await exported()).toEqual([]);
      const r = await cli(dir, 'fields', 'import', file(DEFINITIONS));
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe('Fields imported: 3 created, 0 updated.\n');
      const out = await exported();
      expect(out).toEqual(EXPORTED);
      for (const d of out)
        expect(Object.keys(d).sort()).toEqual([
          'active',
          'category',
          'defaultValue',
          'editable',
          'label',
          'maxOccurs',
          'name',
          'position',
          'tooltip',
          'type',
        ]);
    },
    LONG,
  );

  it(
    're-import upserts by name, case-insensitively',
    async () => {
      const again = [
        { name: 'SUMMARY', label: 'Overview', type: 'markdown', category: 'General', position: 2 },
        { name: 'website', label: 'Web site', type: 'url', category: 'General', position: 3 },
      ];
      const r = await cli(dir, 'fields', 'import', file(again));
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe('Fields imported: 1 created, 1 updated.\n');
      const out = await exported();
      expect(out).toHaveLength(4);
      const summaries = out.filter((d: { name: string }) => d.name.toLowerCase() === 'summary');
      expect(summaries).toHaveLength(1);
      expect(summaries[0]).toMatchObject({ label: 'Overview', position: 2 });
      expect(out.map((d: { name: string }) => d.name.toLowerCase())).toEqual([
        'token',
        'escalation',
        'summary',
        'website',
      ]);
    },
    LONG,
  );

  it.each([
    [
      'an unknown type',
      { name: 'bad', label: 'Bad', type: 'colour', category: 'General' },
      'field 2 (bad): type must be one of text, textarea, markdown, url, email, phone, password, ' +
        'contact, mail-group, switchboard',
    ],
    [
      'a name starting with a digit',
      { name: '1st', label: 'First', type: 'text', category: 'General' },
      "field 2 (1st): name: 1 to 64 letters, digits, '_', '.' or '-', starting with a letter",
    ],
    [
      'maxOccurs 0',
      { name: 'zero', label: 'Zero', type: 'text', category: 'General', maxOccurs: 0 },
      'field 2 (zero): maxOccurs must be 1 (single value), -1 (any number) or a maximum above 1',
    ],
    [
      'maxOccurs 1.5',
      { name: 'half', label: 'Half', type: 'text', category: 'General', maxOccurs: 1.5 },
      'field 2 (half): maxOccurs: ',
    ],
  ])(
    'refuses %s with a clear message and imports nothing',
    async (_, bad, message) => {
      // A valid new definition first: it must not be imported either.
      const r = await cli(
        dir,
        'fields',
        'import',
        file([{ name: 'innocent', label: 'Innocent', type: 'text', category: 'General' }, bad]),
      );
      expect(r.code).not.toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^ecpds-edge: /);
      expect(r.stderr).toContain(message);
      expect(r.stderr).not.toMatch(/(\w+): \1[: ]/); // the key is named once
      expect(r.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
    },
    LONG,
  );

  it(
    'refuses a name given twice (in any case), a file that is not an array, and an unreadable file',
    async () => {
      const twice = await cli(
        dir,
        'fields',
        'import',
        file([
          { name: 'dup', label: 'A', type: 'text', category: 'G' },
          { name: 'DUP', label: 'B', type: 'text', category: 'G' },
        ]),
      );
      expect(twice.code).not.toBe(0);
      expect(twice.stderr).toContain('field DUP is defined twice');
      const object = await cli(dir, 'fields', 'import', file({ name: 'x' }));
      expect(object.code).not.toBe(0);
      expect(object.stderr).toContain('a JSON array of field definitions expected');
      const broken = await cli(dir, 'fields', 'import', file('[{"name": '));
      expect(broken.code).not.toBe(0);
      expect(broken.stderr).toMatch(/^ecpds-edge: cannot read .*fields-\d+\.json: /);
    },
    LONG,
  );

  it(
    'after the refused imports the definitions are unchanged; the export imports into a fresh install as it is',
    async () => {
      const before = await cli(dir, 'fields', 'export');
      expect(before.code, before.stderr).toBe(0);
      const names = JSON.parse(before.stdout).map((d: { name: string }) => d.name.toLowerCase());
      expect(names).toEqual(['token', 'escalation', 'summary', 'website']);

      const fresh = path.join(temp, 'fresh');
      const r = await cli(fresh, 'fields', 'import', file(before.stdout));
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe('Fields imported: 4 created, 0 updated.\n');
      const after = await cli(fresh, 'fields', 'export');
      expect(after.stdout).toBe(before.stdout);
    },
    LONG,
  );
});

describe('notes export', () => {
  const dir = path.join(temp, 'notes');
  beforeAll(async () => {
    // Demo data (fields, destinations, metadata and note flags) written with the data dir's own key.
    const quiet = { info: () => {}, warn: () => {}, error: () => {} };
    const runtime = await openRuntime(parseConfig({ ECPDS_DATA_DIR: dir }), quiet, { hold: false });
    try {
      await loadDemoData(runtime.ports);
    } finally {
      await runtime.close();
    }
  }, LONG);

  it(
    'prints the note of one destination with --destination',
    async () => {
      const r = await cli(dir, 'notes', 'export', '--destination', 'MO_EXETER');
      expect(r.code, r.stderr).toBe(0);
      const notes = JSON.parse(r.stdout);
      expect(notes).toHaveLength(1);
      expect(notes[0].destination).toBe('MO_EXETER');
      const note: string = notes[0].note;
      expect(note).toContain('<h3>Contacts</h3>');
      expect(note).toContain('<h3>General</h3>');
      expect(note).toContain('<dt>Summary</dt><dd><h2>Met Office</h2>');
      expect(note).toContain('<a href="https://mo-exeter.example.org/">the portal</a>');
      expect(note).toContain('<dt>Data policy</dt><dd><p>Licence for operational use only</p></dd>');
      expect(note).toContain('name: Duty officer<br>email: duty@mo-exeter.example.org');
      // Not flagged, or a password field: never in the note.
      expect(note).not.toContain('Web site');
      expect(note).not.toContain('Portal token');
      expect(note).not.toContain('token-mo-exeter');
    },
    LONG,
  );

  it(
    'prints every destination without --destination, and refuses an unknown one',
    async () => {
      const all = await cli(dir, 'notes', 'export');
      expect(all.code, all.stderr).toBe(0);
      const notes = JSON.parse(all.stdout) as Array<{ destination: string; note: string }>;
      expect(notes.map((n) => n.destination)).toEqual([
        'ARPA_BOLOGNA',
        'BOM_MELBOURNE',
        'CMA_BEIJING',
        'DWD_OFFENBACH',
        'FMI_HELSINKI',
        'IMO_REYKJAVIK',
        'INM_MADRID',
        'JMA_TOKYO',
        'KNMI_DE_BILT',
        'METEOFRANCE_TOULOUSE',
        'MO_EXETER',
        'OBS_ARCHIVE_IN',
        'PORTAL_DEMO',
      ]);
      for (const n of notes) {
        expect(n.note).toMatch(/^<h3>/);
        expect(n.note).not.toMatch(/token-/);
      }
      const unknown = await cli(dir, 'notes', 'export', '--destination', 'NOPE');
      expect(unknown.code).not.toBe(0);
      expect(unknown.stdout).toBe('');
      expect(unknown.stderr).toBe('ecpds-edge: Destination NOPE not found\n');
    },
    LONG,
  );
});

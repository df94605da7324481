import { invalid } from '../common/errors.ts';

/**
 * Host options live in the host's `data` text, one `module.key = "value"` line each, sorted;
 * text from the end marker on is not options and is never touched (wire-decisions §8).
 */
export const END_OF_PROPERTIES = '###### END-OF-PROPERTIES ######';

export function splitOptionName(name: string): { module: string; key: string } {
  const dot = name.indexOf('.');
  // A name must read back as the name of its line: no whitespace, '=', quote or control character.
  if (dot <= 0 || dot === name.length - 1 || /[\s="\p{Cc}]/u.test(name)) throw invalid(`Malformed name: ${name}`);
  return { module: name.slice(0, dot), key: name.slice(dot + 1) };
}

const quote = (value: string) =>
  `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\r/g, '\\r').replace(/\n/g, '\\n')}"`;

/** The line setOption writes for an option. */
export const optionLine = (name: string, value: string) => `${name} = ${quote(value)}`;

/**
 * One `name = value` entry of the options text, as the reference reads it: the name with its
 * whitespace dropped (with or without a dot), the value unquoted, and the lines it spans.
 */
export interface OptionEntry {
  name: string;
  value: string;
  /** Index of its first line. */
  first: number;
  /** Index of its last line: a quoted value may span lines up to its closing quote. */
  last: number;
}

interface ParsedOptions {
  lines: string[];
  entries: OptionEntry[];
  /** Index of the end marker's line; lines.length without one. */
  end: number;
}

const UNESCAPE: Record<string, string> = { n: '\n', r: '\r', '"': '"', '\\': '\\' };

/**
 * Every entry before the end marker. A line with an `=` starts one; a quoted value goes on over
 * the next lines up to its closing quote, but never past the marker, which ends the options
 * wherever it stands (setOption and the rewrites then never reach the text after it).
 */
function parseOptions(data: string): ParsedOptions {
  const lines = data === '' ? [] : data.split('\n');
  const marker = lines.findIndex((l) => l.trim() === END_OF_PROPERTIES);
  const end = marker < 0 ? lines.length : marker;
  const entries: OptionEntry[] = [];
  for (let i = 0; i < end; i++) {
    const first = i;
    const line = lines[i]!;
    const equals = line.indexOf('=');
    if (equals < 0) continue;
    const name = line.slice(0, equals).replace(/\s+/g, '');
    let rest = line.slice(equals + 1).trimStart();
    let value: string;
    if (rest.startsWith('"')) {
      rest = rest.slice(1);
      let text = '';
      for (;;) {
        const closed = readQuoted(rest);
        text += closed.text;
        if (closed.done || i + 1 >= end) break;
        text += '\n';
        rest = lines[++i]!;
      }
      value = text;
    } else {
      value = rest.trim();
    }
    entries.push({ name, value, first, last: i });
  }
  return { lines, entries, end };
}

/** Sets one option, keeping every other byte of `data` as it was (other entries of the name are dropped). */
export function setOption(data: string, name: string, value: string): string {
  splitOptionName(name);
  const line = optionLine(name, value);
  const { lines, entries, end } = parseOptions(data);
  if (entries.some((e) => e.name === name)) {
    let written = false;
    return rewrite(lines, entries, (e) => {
      if (e.name !== name) return undefined;
      if (written) return null;
      written = true;
      return line;
    });
  }
  const after = entries.find((e) => e.name > name);
  // With no marker, a trailing newline leaves an empty last line: the new line goes before it.
  const atEnd = end < lines.length || lines.length === 0 || lines[lines.length - 1] !== '' ? end : end - 1;
  lines.splice(after ? after.first : atEnd, 0, line);
  return lines.join('\n');
}

/**
 * Rewrites the entries `change` picks: a line to put in place of the entry's lines, null to drop
 * them, undefined to keep them. Every other byte of `data` stays as it was.
 */
export function rewriteOptions(data: string, change: (entry: OptionEntry) => string | null | undefined): string {
  const { lines, entries } = parseOptions(data);
  return rewrite(lines, entries, change);
}

function rewrite(lines: string[], entries: OptionEntry[], change: (entry: OptionEntry) => string | null | undefined) {
  const out: string[] = [];
  let next = 0;
  for (const entry of entries) {
    const replacement = change(entry);
    if (replacement === undefined) continue;
    out.push(...lines.slice(next, entry.first));
    if (replacement !== null) out.push(replacement);
    next = entry.last + 1;
  }
  if (next === 0) return lines.join('\n');
  out.push(...lines.slice(next));
  return out.join('\n');
}

/** Every entry before the end marker, in the order written (names without a dot included). */
export const optionEntries = (data: string): OptionEntry[] => parseOptions(data).entries;

/**
 * The options of a host's `data`, by full name (`sftp.port`), as the reference reads them: the
 * text before the end marker holds `name = "value"` entries; a quoted value may span lines up to
 * its closing quote; whitespace inside a name is dropped, and a name without a dot is no option.
 * Values written by setOption read back exactly.
 */
export function readOptions(data: string): Map<string, string> {
  const options = new Map<string, string>();
  for (const { name, value } of parseOptions(data).entries) if (name.indexOf('.') > 0) options.set(name, value);
  return options;
}

/** Reads a quoted value up to its closing quote (done) or to the end of the line (it goes on). */
function readQuoted(text: string): { text: string; done: boolean } {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length) {
      const next = text[++i]!;
      out += UNESCAPE[next] ?? `\\${next}`;
    } else if (c === '"') {
      return { text: out, done: true };
    } else {
      out += c;
    }
  }
  return { text: out, done: false };
}

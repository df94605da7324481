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

const optionNameOf = (line: string) => /^\s*([^\s=]+)\s*=/.exec(line)?.[1];

/** Sets one option, keeping every other byte of `data` as it was. */
export function setOption(data: string, name: string, value: string): string {
  splitOptionName(name);
  const line = `${name} = ${quote(value)}`;
  const markerAt = data.split('\n').findIndex((l) => l.trim() === END_OF_PROPERTIES);
  const lines = data === '' ? [] : data.split('\n');
  const head = markerAt < 0 ? lines : lines.slice(0, markerAt);
  const tail = markerAt < 0 ? [] : lines.slice(markerAt);
  // A trailing newline leaves an empty last element: keep it last.
  const trailingEmpty = tail.length === 0 && head.length > 0 && head[head.length - 1] === '' ? head.pop() : undefined;

  const existing = head.findIndex((l) => optionNameOf(l) === name);
  if (existing >= 0) {
    head[existing] = line;
  } else {
    const before = head.findIndex((l) => {
      const other = optionNameOf(l);
      return other !== undefined && other > name;
    });
    head.splice(before < 0 ? head.length : before, 0, line);
  }
  if (trailingEmpty !== undefined) head.push(trailingEmpty);
  return [...head, ...tail].join('\n');
}

const UNESCAPE: Record<string, string> = { n: '\n', r: '\r', '"': '"', '\\': '\\' };

/**
 * The options of a host's `data`, by full name (`sftp.port`), as the reference reads them: the
 * text before the end marker holds `name = "value"` entries; a quoted value may span lines up to
 * its closing quote; whitespace inside a name is dropped, and a name without a dot is no option.
 * Values written by setOption read back exactly.
 */
export function readOptions(data: string): Map<string, string> {
  const options = new Map<string, string>();
  const lines = data.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === END_OF_PROPERTIES) break;
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
        if (closed.done || i + 1 >= lines.length) break;
        text += '\n';
        rest = lines[++i]!;
      }
      value = text;
    } else {
      value = rest.trim();
    }
    if (name.indexOf('.') > 0) options.set(name, value);
  }
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

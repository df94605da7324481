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

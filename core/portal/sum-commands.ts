import type { SumAlgorithm } from './file-sums.ts';

/**
 * The only commands the portal's SSH server runs: `md5sum` and `sha512sum` of files in the user's
 * tree, as rclone's sftp remote runs them to compare files (`md5sum` alone first, on an empty input,
 * to learn that the command works; then `md5sum /DEST/path`, the path escaped for a POSIX shell),
 * answered from the files' known sums (file-sums.ts). A command line is read as `sh` would read it,
 * without anything that would make `sh` run something else: quotes and backslashes are taken,
 * while an unquoted character that means something to the shell (`; | & $ * ~ > ...`), an expansion
 * in double quotes, or any option makes the command refused, as every other command is. Pure.
 */

export interface SumCommand {
  program: 'md5sum' | 'sha512sum';
  algorithm: SumAlgorithm;
  /** The files named, as given; none: the sum of what the client sends until its end (as `md5sum` reads stdin). */
  files: string[];
}

const PROGRAMS: Record<string, SumAlgorithm> = { md5sum: 'md5', sha512sum: 'sha512' };

/** The command, or null when it is not one the server runs. */
export function parseSumCommand(command: string): SumCommand | null {
  const words = shellWords(command);
  if (words === null || words.length === 0) return null;
  const [program, ...files] = words;
  const algorithm = PROGRAMS[program!];
  // An option (`-c`, `--tag`, `-` for stdin) is not taken: rclone sends none.
  if (algorithm === undefined || files.some((f) => f.startsWith('-'))) return null;
  return { program: program as SumCommand['program'], algorithm, files };
}

/** A character `sh` takes as itself outside quotes (with space and tab, which separate words). */
const PLAIN = /^[A-Za-z0-9_.,:/@%+=-]$/;

/**
 * The words of a command line as `sh` splits them, with its quoting: `'...'` literally, `"..."` with
 * `\` escaping `$ \` " \\` and a newline, `\` outside quotes escaping any character. Null when the
 * line holds anything else `sh` would act on (an operator, an expansion, a glob, a comment, an
 * unquoted newline), or an unterminated quote.
 */
export function shellWords(line: string): string[] | null {
  const words: string[] = [];
  let word: string | null = null;
  const chars = [...line];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === ' ' || c === '\t') {
      if (word !== null) words.push(word);
      word = null;
    } else if (c === '\\') {
      const next = chars[++i];
      if (next === undefined) return null;
      // A backslash before a newline joins the lines.
      if (next !== '\n') word = (word ?? '') + next;
    } else if (c === "'") {
      const end = chars.indexOf("'", i + 1);
      if (end < 0) return null;
      word = (word ?? '') + chars.slice(i + 1, end).join('');
      i = end;
    } else if (c === '"') {
      let text = '';
      for (i++; chars[i] !== '"'; i++) {
        const d = chars[i];
        if (d === undefined || d === '$' || d === '`') return null;
        if (d === '\\' && ['$', '`', '"', '\\', '\n'].includes(chars[i + 1] ?? '')) {
          if (chars[++i] !== '\n') text += chars[i];
        } else text += d;
      }
      word = (word ?? '') + text;
    } else if (PLAIN.test(c) || c.codePointAt(0)! >= 0x80) {
      word = (word ?? '') + c;
    } else return null;
  }
  if (word !== null) words.push(word);
  return words;
}

/**
 * One line of `md5sum`'s output for a name, as GNU coreutils writes it: a name holding `\`, a
 * newline or a carriage return is escaped, and the line then starts with `\` (which rclone skips).
 */
export function sumLine(hex: string, name: string): string {
  if (!/[\\\n\r]/.test(name)) return `${hex}  ${name}\n`;
  const escaped = name.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
  return `\\${hex}  ${escaped}\n`;
}

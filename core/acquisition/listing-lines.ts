import { invalid } from '../common/errors.ts';
import { formatDate, InvalidDatePattern, parseDateDelta } from './dates.ts';

/** One line of an Acquisition host's Directory field: a remote directory to list, and what to take from it. */
export interface ListingLine {
  /** The line as written, for the run's output. */
  text: string;
  /** Its `[name=value;…]` block: options over the host's `acquisition.*` ones, for this line only. */
  options: Map<string, string>;
  /** The directory to list, its tokens replaced. */
  directory: string;
  /** The names to take (the whole name must match, as the reference's Java `matches`); every name when null. */
  namePattern: RegExp | null;
}

export class InvalidListingLine extends Error {}

/** An option's flag as the reference reads it: yes, true, on or 1, in any case. */
export const yes = (value: string | undefined) => value !== undefined && /^(yes|true|on|1)$/i.test(value);

/** `acquisition.priority`: none when unset; one that is no whole number refuses the file it was to register. */
export function priorityOf(text: string | undefined) {
  if (text === undefined || text.trim() === '') return undefined;
  const value = Number(text);
  if (!Number.isInteger(value)) throw invalid(`acquisition.priority ${text}: a whole number expected`);
  return value;
}

/** The values of the `$host[…]`, `$transferMethod[…]` and `$ectransModule[…]` tokens (never a password). */
export type HostTokens = Record<string, string>;

/** An option of a line: its own, else the host's `acquisition.<name>`. */
export function lineOption(line: Pick<ListingLine, 'options'>, host: Map<string, string>, name: string) {
  return line.options.get(name) ?? host.get(`acquisition.${name}`);
}

/**
 * Reads the Directory field of an Acquisition host: one listing per line, `[options]`, then the directory
 * (with `$date`, `$dirdate` and host tokens), then an optional `{regex}` for the names. Blank lines and
 * lines starting with `#` are skipped. A script (`$(…)`) is refused: nothing here runs a host's code.
 */
export function readListingLines(field: string, host: Map<string, string>, tokens: HostTokens, now: Date) {
  if (field.trim().startsWith('$(')) {
    throw new InvalidListingLine('Directory scripts ($(…)) are not supported: write the listing lines themselves');
  }
  const lines: ListingLine[] = [];
  for (const [index, raw] of field.split(/\r?\n/).entries()) {
    const text = raw.trim();
    if (text === '' || text.startsWith('#')) continue;
    try {
      lines.push(readLine(text, host, tokens, now));
    } catch (error) {
      if (!(error instanceof InvalidListingLine || error instanceof InvalidDatePattern)) throw error;
      throw new InvalidListingLine(`Directory line ${index + 1} (${text}): ${error.message}`);
    }
  }
  return lines;
}

function readLine(text: string, host: Map<string, string>, tokens: HostTokens, now: Date): ListingLine {
  let rest = text;
  let options = new Map<string, string>();
  if (rest.startsWith('[')) {
    const end = closing(rest, 0, '[', ']');
    options = readOptionBlock(rest.slice(1, end));
    rest = rest.slice(end + 1);
  }
  let namePattern: RegExp | null = null;
  if (rest.endsWith('}')) {
    const start = opening(rest, rest.length - 1);
    const pattern = rest.slice(start + 1, -1);
    try {
      namePattern = new RegExp(`^(?:${pattern})$`);
    } catch (error) {
      throw new InvalidListingLine(`invalid name pattern {${pattern}}: ${(error as Error).message}`);
    }
    rest = rest.slice(0, start);
  }
  const directory = replaceTokens(rest, { host, line: options, tokens, now });
  if (directory === '') throw new InvalidListingLine('no directory');
  return { text, options, directory, namePattern };
}

/** `name=value` pairs separated by `;` or `,`; a value keeps any further `=` (`filesize=>=1000`). */
function readOptionBlock(block: string) {
  const options = new Map<string, string>();
  for (const part of block.split(/[;,]/)) {
    if (part.trim() === '') continue;
    const at = part.indexOf('=');
    if (at <= 0) throw new InvalidListingLine(`option ${part.trim()} is not name=value`);
    options.set(
      part
        .slice(0, at)
        .trim()
        .replace(/^acquisition\./, ''),
      part.slice(at + 1).trim(),
    );
  }
  return options;
}

/** The index of the bracket closing the one at `from`, nested ones counted, escaped ones not. */
function closing(text: string, from: number, open: string, close: string) {
  let depth = 0;
  for (let i = from; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === open) depth++;
    else if (text[i] === close && --depth === 0) return i;
  }
  throw new InvalidListingLine(`${open} without ${close}`);
}

/** The index of the `{` opening the `}` at `end`, scanning back; nested quantifiers (`\d{8}`) counted. */
function opening(text: string, end: number) {
  let depth = 0;
  for (let i = end; i >= 0; i--) {
    if (i > 0 && text[i - 1] === '\\') continue;
    if (text[i] === '}') depth++;
    else if (text[i] === '{' && --depth === 0) return i;
  }
  throw new InvalidListingLine('} without {');
}

const TOKEN = /\$(date|dirdate|host|transferMethod|ectransModule)(?:\[([^\]]*)\])?/g;

/** Replaces the date and host tokens of a line's text (its directory; a target or metadata template). */
export function replaceTokens(
  text: string,
  c: { host: Map<string, string>; line: Map<string, string>; tokens: HostTokens; now: Date },
) {
  return text.replace(TOKEN, (whole, name: string, args: string | undefined) => {
    if (name === 'date' || name === 'dirdate') {
      const own = args === undefined ? new Map<string, string>() : readOptionBlock(args);
      // $date takes the host's date options; $dirdate the line's over them.
      const from = (option: string) =>
        own.get(option) ?? (name === 'dirdate' ? c.line.get(option) : undefined) ?? c.host.get(`acquisition.${option}`);
      if (from('datesource') !== undefined) throw new InvalidListingLine('datesource is not supported');
      const delta = from('datedelta');
      const at = new Date(c.now.getTime() + (delta ? parseDateDelta(delta) : 0));
      return formatDate(at, from('dateformat') ?? 'yyyyMMdd');
    }
    if (args === undefined) return whole;
    const value = c.tokens[`${name}[${args}]`];
    if (value === undefined) throw new InvalidListingLine(`unknown token ${whole}`);
    return value;
  });
}

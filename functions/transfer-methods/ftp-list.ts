import { type Client, FTPError } from 'basic-ftp';
import type { ListedEntry } from '../../core/acquisition/selection.ts';

type Six<T> = [T, T, T, T, T, T];

/**
 * A directory's entries over a logged-in session: MLSD when the server announced it, else (or when it
 * refuses it) LIST read as `ls -l`. `directory` goes to the server as given, as `fetch` sends its paths:
 * relative to the login's directory or absolute. `now` places the dates `ls` shows without a year.
 */
export async function ftpEntries(client: Client, directory: string, now = new Date()): Promise<ListedEntry[]> {
  // basic-ftp read the server's FEAT at login: MLSD is among its commands only when MLST was announced.
  if (client.availableListCommands.includes('MLSD')) {
    try {
      return parseMlsd(await rawListing(client, 'MLSD', directory));
    } catch (error) {
      // A server that does not implement or allows no MLSD may still answer LIST; a missing directory
      // is refused by LIST as well, and reported then.
      if (!(error instanceof FTPError && error.code >= 500)) throw listingFailure(directory, error);
    }
  }
  try {
    return parseUnixListing(await rawListing(client, 'LIST', directory), now);
  } catch (error) {
    throw listingFailure(directory, error);
  }
}

/** The listing's text: basic-ftp runs the data connection (passive mode, TLS), the reading of it is ours. */
async function rawListing(client: Client, command: 'MLSD' | 'LIST', directory: string): Promise<string> {
  let text = '';
  client.availableListCommands = [command];
  client.parseList = (raw) => {
    text = raw;
    return [];
  };
  await client.list(directory);
  return text;
}

/** 550 (and 450 for LIST): the directory does not exist, or may not be seen; the reply says which. */
function listingFailure(directory: string, error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof FTPError && (error.code === 550 || error.code === 450))
    return new Error(`No such directory ${directory} (${message})`);
  return new Error(`Cannot list ${directory} (${message})`);
}

const lines = (text: string) => text.split(/\r?\n/).filter((line) => line.trim() !== '');

/** A name as listed; some servers give the path they were asked for in front of it. */
const baseName = (name: string) => name.slice(name.lastIndexOf('/') + 1);

const kept = (name: string) => name !== '' && name !== '.' && name !== '..';

/**
 * An MLSD listing (RFC 3659): `fact=value;...`, a space and the name on each line; the directory listed
 * and its parent left out.
 */
export function parseMlsd(text: string): ListedEntry[] {
  return lines(text).flatMap((line) => {
    const entry = mlsdEntry(line);
    return entry ? [entry] : [];
  });
}

function mlsdEntry(line: string): ListedEntry | null {
  // The facts end at the first `; ` (their values hold no space); the name, after it, may hold anything.
  const end = line.startsWith(' ') ? 0 : line.indexOf('; ') + 1;
  if (end === 0 && !line.startsWith(' ')) return null;
  const facts = new Map<string, string>();
  for (const fact of line.slice(0, end).split(';')) {
    const at = fact.indexOf('=');
    if (at > 0) facts.set(fact.slice(0, at).toLowerCase(), fact.slice(at + 1));
  }
  const name = baseName(line.slice(end + 1));
  const type = mlsdType(facts.get('type'));
  if (type === null || !kept(name)) return null;
  const size = facts.get('size');
  return {
    name,
    type,
    size: size !== undefined && /^\d+$/.test(size) ? Number(size) : null,
    time: mlsdTime(facts.get('modify')),
  };
}

/** The entry's type; null for the directory listed (`cdir`) and its parent (`pdir`). */
function mlsdType(fact: string | undefined): ListedEntry['type'] | null {
  const type = fact?.toLowerCase() ?? '';
  if (type === 'cdir' || type === 'pdir') return null;
  if (type === 'file') return 'file';
  if (type === 'dir') return 'directory';
  // ProFTPD says `OS.unix=symlink`; RFC 3659's examples and other servers `OS.unix=slink:<target>`.
  if (type === 'os.unix=symlink' || type.startsWith('os.unix=slink')) return 'symlink';
  return 'other';
}

/** `modify`: YYYYMMDDHHMMSS[.sss], in UTC by the RFC. */
function mlsdTime(fact: string | undefined): Date | null {
  const parts = fact?.match(/^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(?:\.(\d{1,3}))?$/);
  if (!parts) return null;
  const [year, month, day, hour, minute, second] = parts.slice(1, 7).map(Number) as Six<number>;
  const ms = Number((parts[7] ?? '0').padEnd(3, '0'));
  const time = new Date(Date.UTC(year, month - 1, day, hour, minute, second, ms));
  return Number.isNaN(time.getTime()) ? null : time;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/**
 * type and mode, links, owner and group (either may be missing, and hold spaces), size (`major, minor`
 * for a device), month, day, then the time of day (the past six months) or the year, and the name.
 */
const LS_LINE = new RegExp(
  '^([-a-zA-Z])[-rwxsStTlL]{9}[+.@]?\\s+\\d{1,10}\\s+(?:.*?\\s)??(\\d{1,20}|\\d{1,10},\\s*\\d{1,10})\\s+' +
    `(${MONTHS.join('|')})\\s+(\\d{1,2})\\s+(\\d{1,2}:\\d{2}|\\d{4}) (.*)$`,
  'i',
);

/**
 * A LIST answer in the `ls -l` format of Unix servers, the `total` line and `.` and `..` left out.
 * Another format fails the listing with its first line: its entries would otherwise be silently missed.
 */
export function parseUnixListing(text: string, now: Date): ListedEntry[] {
  return lines(text).flatMap((line) => {
    if (/^total\s+\d+\s*$/i.test(line)) return [];
    const entry = lsEntry(line, now);
    if (entry === undefined) throw new Error(`Unrecognised LIST line: ${line}`);
    return entry ? [entry] : [];
  });
}

/** The line's entry; null for `.` and `..`, undefined for a line not in the `ls -l` format. */
function lsEntry(line: string, now: Date): ListedEntry | null | undefined {
  const parts = line.match(LS_LINE);
  if (!parts) return undefined;
  const [kind, size, month, day, yearOrTime, listed] = parts.slice(1) as Six<string>;
  const type = kind === '-' || kind === 'f' ? 'file' : kind === 'd' ? 'directory' : kind === 'l' ? 'symlink' : 'other';
  // A link shows as `name -> target`.
  const arrow = type === 'symlink' ? listed.indexOf(' -> ') : -1;
  const name = baseName(arrow >= 0 ? listed.slice(0, arrow) : listed);
  if (!kept(name)) return null;
  return {
    name,
    type,
    size: /^\d+$/.test(size) ? Number(size) : null,
    time: lsTime(MONTHS.indexOf(month.toLowerCase()), Number(day), yearOrTime, now),
  };
}

/** A day's slack for a server whose clock or time zone runs ahead of ours. */
const AHEAD_MS = 24 * 3600_000;

/**
 * `ls` shows the time of day for the past six months and the year otherwise; the year of the former
 * is the one that does not put it in the future. Read as UTC: the format has no zone.
 */
function lsTime(month: number, day: number, yearOrTime: string, now: Date): Date {
  if (!yearOrTime.includes(':')) return new Date(Date.UTC(Number(yearOrTime), month, day));
  const [hour, minute] = yearOrTime.split(':').map(Number);
  const year = now.getUTCFullYear();
  const time = Date.UTC(year, month, day, hour, minute);
  return new Date(time > now.getTime() + AHEAD_MS ? Date.UTC(year - 1, month, day, hour, minute) : time);
}

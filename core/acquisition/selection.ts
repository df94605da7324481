import { type Comparison, holds, InvalidFilter, parseAgeFilter, parseSizeFilter } from './filters.ts';
import { type ListingLine, lineOption, yes } from './listing-lines.ts';

/** An entry of a remote listing, as a transfer method reports it. */
export interface ListedEntry {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number | null;
  /** Its modification time; null when the host does not tell it. */
  time: Date | null;
}

/** Whether an entry is taken, or why not (the run's output shows it). */
export type EntryOutcome = { selected: true } | { selected: false; reason: string };

/** The rules a line's entries are judged by: its name pattern and the `acquisition.*` filters. */
export interface EntryRules {
  namePattern: RegExp | null;
  /** `wildcardFilter` (`*.grib`, `obs_??.bufr`): the whole name must match. */
  wildcard: { text: string; pattern: RegExp } | null;
  /** `regexPattern`: a match anywhere in the name (`$date` and `$namePattern`, the line's `{regex}`, replaced). */
  regexPattern: RegExp | null;
  useSymlink: boolean;
  onlyValidTime: boolean;
  size: Comparison | null;
  age: Comparison | null;
}

/**
 * The line's rules from its options over the host's; a filter that cannot be read is refused, not ignored.
 * `tokens` replaces a pattern's date tokens as the line's directory had them replaced.
 */
export function rulesOf(
  line: ListingLine,
  host: Map<string, string>,
  tokens: (text: string) => string = (text) => text,
): EntryRules {
  const option = (name: string) => lineOption(line, host, name);
  const size = option('filesize');
  const age = option('fileage');
  const wildcard = option('wildcardFilter');
  const regex = option('regexPattern');
  return {
    namePattern: line.namePattern,
    wildcard: wildcard ? { text: wildcard, pattern: globPattern(wildcard) } : null,
    regexPattern: regex ? searchPattern(regex, line, tokens) : null,
    useSymlink: flag('useSymlink', option('useSymlink')),
    onlyValidTime: flag('onlyValidTime', option('onlyValidTime')),
    size: size ? parseSizeFilter(size) : null,
    age: age ? parseAgeFilter(age) : null,
  };
}

/** A wildcard as the shells read one: `*` any run of characters but `/`, `?` one of them. */
function globPattern(glob: string) {
  const body = [...glob]
    .map((ch) => (ch === '*' ? '[^/]*' : ch === '?' ? '[^/]' : ch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${body}$`);
}

function searchPattern(text: string, line: ListingLine, tokens: (text: string) => string) {
  const inner = line.namePattern ? line.namePattern.source.slice(4, -2) : '.*';
  const source = tokens(text).replaceAll('$namePattern', inner);
  try {
    return new RegExp(source);
  } catch (error) {
    throw new InvalidFilter(`regexPattern ${text}: ${(error as Error).message}`);
  }
}

function flag(name: string, value: string | undefined) {
  if (value === undefined) return false;
  if (yes(value)) return true;
  if (/^(no|false|off|0)$/i.test(value)) return false;
  throw new InvalidFilter(`${name} ${value}: expected yes or no`);
}

/**
 * Judges an entry in the reference's order: its type, its time, its name, then its size (not for a
 * symbolic link, whose listed size is the link's) and its age (not when its time is unknown).
 */
export function judge(entry: ListedEntry, rules: EntryRules, now: Date): EntryOutcome {
  if (entry.type === 'directory') return no('a directory');
  if (entry.type === 'other') return no('neither a file nor a symbolic link');
  if (entry.type === 'symlink' && !rules.useSymlink) return no('a symbolic link (useSymlink is off)');
  if (entry.time === null && rules.onlyValidTime) return no('no valid time (onlyValidTime is on)');
  if (rules.namePattern && !rules.namePattern.test(entry.name)) {
    return no(`name not matching {${rules.namePattern.source.slice(4, -2)}}`);
  }
  if (rules.wildcard && !rules.wildcard.pattern.test(entry.name)) {
    return no(`name not matching wildcardFilter ${rules.wildcard.text}`);
  }
  if (rules.regexPattern && !rules.regexPattern.test(entry.name)) {
    return no(`name not matching regexPattern ${rules.regexPattern.source}`);
  }
  if (rules.size && entry.type !== 'symlink') {
    if (entry.size === null) return no(`size unknown (filesize ${rules.size.text})`);
    if (!holds(rules.size, entry.size)) return no(`wrong size: ${entry.size} bytes (filesize ${rules.size.text})`);
  }
  if (rules.age && entry.time !== null) {
    const age = now.getTime() - entry.time.getTime();
    if (!holds(rules.age, age)) return no(`wrong age: ${Math.round(age / 1000)} s (fileage ${rules.age.text})`);
  }
  return { selected: true };
}

const no = (reason: string): EntryOutcome => ({ selected: false, reason });

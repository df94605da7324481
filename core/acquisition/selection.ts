import { type Comparison, holds, InvalidFilter, parseAgeFilter, parseSizeFilter } from './filters.ts';
import { type ListingLine, lineOption } from './listing-lines.ts';

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
  useSymlink: boolean;
  onlyValidTime: boolean;
  size: Comparison | null;
  age: Comparison | null;
}

/** The line's rules from its options over the host's; a filter that cannot be read is refused, not ignored. */
export function rulesOf(line: ListingLine, host: Map<string, string>): EntryRules {
  const option = (name: string) => lineOption(line, host, name);
  const size = option('filesize');
  const age = option('fileage');
  return {
    namePattern: line.namePattern,
    useSymlink: flag('useSymlink', option('useSymlink')),
    onlyValidTime: flag('onlyValidTime', option('onlyValidTime')),
    size: size ? parseSizeFilter(size) : null,
    age: age ? parseAgeFilter(age) : null,
  };
}

function flag(name: string, value: string | undefined) {
  if (value === undefined) return false;
  if (/^(yes|true|on|1)$/i.test(value)) return true;
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

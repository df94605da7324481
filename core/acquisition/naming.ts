import { type HostTokens, type ListingLine, lineOption, replaceTokens, yes } from './listing-lines.ts';
import type { ListedEntry } from './selection.ts';

/** What an acquired file is registered as: its target, its unique name, and the path it is read from. */
export interface AcquiredName {
  /** The full path on the host: the data file's source. */
  original: string;
  target: string;
  /** With the destination and the target, the key a file already acquired is recognised by. */
  uniqueName: string;
}

/**
 * The reference's naming: `acquisition.target` (default `$target`, the entry's name) with `$target`,
 * `$name`, `$original`, `$destination`, `$timestamp` (its time in ms, to the second) and the date and
 * host tokens; the unique name the original path, or the initial target (`useTargetAsUniqueName`), or
 * nothing (`uniqueByTargetOnly`), followed by `.<time>` under `uniqueByNameAndTime`.
 */
export function nameOf(
  entry: ListedEntry,
  line: ListingLine,
  host: Map<string, string>,
  c: { destination: string; tokens: HostTokens; now: Date },
): AcquiredName {
  const option = (name: string) => lineOption(line, host, name);
  const original = `${line.directory.replace(/\/+$/, '')}/${entry.name}`;
  const time = entry.time === null ? null : Math.floor(entry.time.getTime() / 1000) * 1000;
  const own: Record<string, string> = {
    target: entry.name,
    name: entry.name,
    original,
    destination: c.destination,
    timestamp: time === null ? '' : String(time),
  };
  const template = option('target') ?? '$target';
  const named = template.replace(
    /\$(target|name|original|destination|timestamp)\b/g,
    (_, token: string) => own[token]!,
  );
  const target = replaceTokens(named, { host, line: line.options, tokens: c.tokens, now: c.now });
  const base = yes(option('uniqueByTargetOnly')) ? '' : yes(option('useTargetAsUniqueName')) ? entry.name : original;
  const uniqueName = yes(option('uniqueByNameAndTime')) && time !== null ? `${base}.${time}` : base;
  return { original, target, uniqueName };
}

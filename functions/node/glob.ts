import fs from 'node:fs';
import path from 'node:path';

/**
 * Expands file patterns a shell left unexpanded (quoted, or too many files for one command
 * line): `*`, `?`, `[...]` within a name and `**` for any depth. Names starting with a dot
 * match only a pattern that starts with one, as in a shell.
 */
export interface Expansion {
  files: string[];
  problems: Array<{ pattern: string; reason: string }>;
}

const MAGIC = /[*?[]/;

function segmentRegex(segment: string): RegExp {
  let re = '';
  for (let i = 0; i < segment.length; i++) {
    const ch = segment[i]!;
    if (ch === '*') re += '[^/]*';
    else if (ch === '?') re += '[^/]';
    else if (ch === '[') {
      const end = segment.indexOf(']', i + 2);
      if (end < 0) {
        re += '\\[';
        continue;
      }
      const body = segment
        .slice(i + 1, end)
        .replace(/^!/, '^')
        .replace(/\\/g, '\\\\');
      re += `[${body}]`;
      i = end;
    } else re += ch.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

const isDirectory = (p: string) => fs.statSync(p, { throwIfNoEntry: false })?.isDirectory() ?? false;

function walk(dir: string, segments: string[], out: Set<string>) {
  if (segments.length === 0) {
    out.add(dir);
    return;
  }
  const [segment, ...rest] = segments as [string, ...string[]];
  if (segment === '**') {
    walk(dir, rest, out);
    for (const entry of readdir(dir)) {
      // Symbolic links to directories are not followed: a loop would never end.
      if (entry.isDirectory() && !entry.name.startsWith('.')) walk(path.join(dir, entry.name), segments, out);
    }
    return;
  }
  if (!MAGIC.test(segment)) {
    const next = path.join(dir, segment);
    if (rest.length === 0 || isDirectory(next)) walk(next, rest, out);
    return;
  }
  const re = segmentRegex(segment);
  for (const entry of readdir(dir)) {
    if (entry.name.startsWith('.') && !segment.startsWith('.')) continue;
    if (re.test(entry.name)) walk(path.join(dir, entry.name), rest, out);
  }
}

function readdir(dir: string): fs.Dirent[] {
  try {
    return fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

const isFile = (p: string) => fs.statSync(p, { throwIfNoEntry: false })?.isFile() ?? false;

/** Absolute paths of the regular files the patterns name, sorted and without duplicates. */
export function expandPatterns(patterns: string[], cwd = process.cwd()): Expansion {
  const files = new Set<string>();
  const problems: Expansion['problems'] = [];
  for (const pattern of patterns) {
    const absolute = path.resolve(cwd, pattern);
    if (!MAGIC.test(pattern)) {
      if (isFile(absolute)) files.add(absolute);
      else problems.push({ pattern, reason: fs.existsSync(absolute) ? 'not a regular file' : 'no such file' });
      continue;
    }
    const { root } = path.parse(absolute);
    const found = new Set<string>();
    walk(
      root,
      absolute
        .slice(root.length)
        .split(path.sep)
        .filter((s) => s !== ''),
      found,
    );
    const matched = [...found].filter(isFile);
    if (matched.length === 0) problems.push({ pattern, reason: 'no file matches' });
    for (const f of matched) files.add(f);
  }
  return { files: [...files].sort(), problems };
}

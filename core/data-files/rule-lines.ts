/**
 * The reference's rule sets (`alias.<destination>`, `alias.pattern`, `scheduler.force`): one or more
 * lines, each either plain parameters or `({operator} value) parameters`, with the operators `==`
 * (a value in `{}` is a regular expression), `!=`, `.=` (starts with) and `=.` (ends with).
 */

/** Java's String.matches: the whole text. An expression that does not compile matches nothing. */
export function wholeMatch(text: string, regex: string): boolean {
  try {
    return new RegExp(`^(?:${regex})$`, 'su').test(text);
  } catch {
    return false;
  }
}

function lineApplies(operator: string, key: string): boolean {
  const value = operator.slice(2).trim();
  if (operator.startsWith('=='))
    return value.startsWith('{') && value.endsWith('}') ? wholeMatch(key, value.slice(1, -1)) : key === value;
  if (operator.startsWith('!=')) return key !== value;
  if (operator.startsWith('.=')) return key.startsWith(value);
  if (operator.startsWith('=.')) return key.endsWith(value);
  return false;
}

/**
 * The parameters that apply to `key`, as the reference's Format.choose picks them: the first
 * conditional line that holds wins; otherwise the last line read decides (a plain line gives its
 * parameters, a conditional one that does not hold gives none).
 */
export function chooseLine(key: string, text: string): string | null {
  let result: string | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    const close = line.indexOf(')');
    if (line.startsWith('(') && close > 3) {
      if (lineApplies(line.slice(1, close).trim(), key)) return line.slice(close + 1).trim();
      result = null;
    } else {
      result = line;
    }
  }
  return result;
}

/** `k=v,k2=v2` or `k=v;k2=v2` into a map (names lower case; the reference's are case-insensitive). */
export function ruleParameters(line: string | null): Map<string, string> {
  const params = new Map<string, string>();
  for (const item of (line ?? '').split(/[;,]/)) {
    const eq = item.indexOf('=');
    if (eq <= 0) continue;
    params.set(item.slice(0, eq).trim().toLowerCase(), item.slice(eq + 1).trim());
  }
  return params;
}

/** The rule applies to the target: its `pattern` (default every name) matches and its `ignore` does not. */
export function ruleSelects(params: Map<string, string>, target: string): boolean {
  const ignore = params.get('ignore');
  return wholeMatch(target, params.get('pattern') ?? '.*') && !(ignore !== undefined && wholeMatch(target, ignore));
}

/** The reference's booleans: yes or true (any case) is true; no or false is false. */
export function ruleBoolean(value: string | undefined): boolean | null {
  if (value === undefined) return null;
  const v = value.trim().toLowerCase();
  if (v === 'yes' || v === 'true') return true;
  if (v === 'no' || v === 'false') return false;
  return null;
}

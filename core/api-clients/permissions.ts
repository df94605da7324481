import { LRUCache } from 'lru-cache';
import { invalid } from '../common/errors.ts';

/** Permission expressions compiled once; the few a deployment uses stay, a flood of others cannot grow it. */
const compiled = new LRUCache<string, { re: RegExp | null }>({ max: 10_000 });

/** Java `String.matches` semantics: the expression must match the whole service name. */
function wholeName(expression: string): RegExp | null {
  let entry = compiled.get(expression);
  if (entry === undefined) {
    let re: RegExp | null;
    try {
      re = new RegExp(`^(?:${expression})$`, 'u');
    } catch {
      re = null;
    }
    entry = { re };
    compiled.set(expression, entry);
  }
  return entry.re;
}

export const compiles = (expression: string) => expression.length > 0 && wholeName(expression) !== null;

export const grants = (permissions: readonly string[], service: string) =>
  permissions.some((p) => wholeName(p)?.test(service) ?? false);

/** Refuses an expression that does not compile: checked when saved, never at request time. */
export function checkPermissions(permissions: readonly string[]): string[] {
  for (const p of permissions) {
    if (!compiles(p)) throw invalid(`Invalid permission expression: ${p}`);
  }
  return [...permissions];
}

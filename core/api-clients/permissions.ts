import { invalid } from '../common/errors.ts';

const compiled = new Map<string, RegExp | null>();

/** Java `String.matches` semantics: the expression must match the whole service name. */
function wholeName(expression: string): RegExp | null {
  let re = compiled.get(expression);
  if (re === undefined) {
    try {
      re = new RegExp(`^(?:${expression})$`, 'u');
    } catch {
      re = null;
    }
    if (compiled.size > 10_000) compiled.clear();
    compiled.set(expression, re);
  }
  return re;
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

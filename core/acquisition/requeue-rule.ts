import { yes } from './listing-lines.ts';

/**
 * `acquisition.requeueon`: when a file listed again is acquired again. The reference evaluates it as
 * JavaScript; here it is read as the expressions it is written with, and nothing else runs: `$time1`,
 * `$size1` (the file acquired), `$time2`, `$size2` (the file listed), `$destination`, `$target`,
 * `$original`, numbers, quoted strings, `+ - * /`, comparisons, `&& || !` and parentheses.
 */
export type RequeueValues = Record<'time1' | 'size1' | 'time2' | 'size2', number> &
  Record<'destination' | 'target' | 'original', string>;

export class InvalidRequeueRule extends Error {}

type Value = number | string | boolean;
type Node = (values: RequeueValues) => Value;

const VARIABLES = new Set(['time1', 'size1', 'time2', 'size2', 'destination', 'target', 'original']);
const TOKEN = /\s*(\$[a-z0-9]+|\d+(?:\.\d+)?|'[^']*'|"[^"]*"|&&|\|\||[=!<>]=|[<>!()+\-*/])/gy;

/** The rule of a host's options: `requeueon`, else the legacy flags; null when files are never acquired again. */
export function requeueRuleOf(option: (name: string) => string | undefined) {
  const rule = option('requeueon');
  if (rule !== undefined && rule.trim() !== '') return parseRequeueRule(rule);
  if (!yes(option('requeueonupdate'))) return null;
  return parseRequeueRule(yes(option('requeueonsamesize')) ? '$time2 > $time1' : '$time2 > $time1 && $size2 != $size1');
}

export function parseRequeueRule(text: string): (values: RequeueValues) => boolean {
  const tokens = tokenize(text);
  let at = 0;
  const peek = () => tokens[at];
  const take = (expected?: string) => {
    const token = tokens[at];
    if (token === undefined || (expected !== undefined && token !== expected)) {
      throw new InvalidRequeueRule(`requeueon ${text}: expected ${expected ?? 'more'} at ${token ?? 'the end'}`);
    }
    at++;
    return token;
  };
  const binary = (next: () => Node, ops: string[]): Node => {
    let left = next();
    while (ops.includes(peek() ?? '')) {
      const op = take();
      const l = left;
      const r = next();
      left = (v) => apply(op, l(v), r(v));
    }
    return left;
  };
  const or = (): Node => binary(and, ['||']);
  const and = (): Node => binary(equality, ['&&']);
  const equality = (): Node => binary(relation, ['==', '!=']);
  const relation = (): Node => binary(sum, ['<', '>', '<=', '>=']);
  const sum = (): Node => binary(product, ['+', '-']);
  const product = (): Node => binary(unary, ['*', '/']);
  const unary = (): Node => {
    if (peek() === '!') {
      take();
      const operand = unary();
      return (v) => !operand(v);
    }
    if (peek() === '-') {
      take();
      const operand = unary();
      return (v) => -Number(operand(v));
    }
    return primary();
  };
  const primary = (): Node => {
    const token = take();
    if (token === '(') {
      const inner = or();
      take(')');
      return inner;
    }
    if (token.startsWith('$')) {
      const name = token.slice(1);
      if (!VARIABLES.has(name)) throw new InvalidRequeueRule(`requeueon ${text}: unknown variable ${token}`);
      return (v) => v[name as keyof RequeueValues];
    }
    if (/^\d/.test(token)) return () => Number(token);
    if (/^['"]/.test(token)) return () => token.slice(1, -1);
    throw new InvalidRequeueRule(`requeueon ${text}: unexpected ${token}`);
  };
  const rule = or();
  if (at < tokens.length) throw new InvalidRequeueRule(`requeueon ${text}: unexpected ${tokens[at]}`);
  return (values) => rule(values) === true;
}

function tokenize(text: string) {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    const start = TOKEN.lastIndex;
    const m = TOKEN.exec(text);
    if (!m) {
      if (text.slice(start).trim() === '') break;
      throw new InvalidRequeueRule(`requeueon ${text}: cannot read ${text.slice(start).trim()}`);
    }
    tokens.push(m[1]!);
  }
  if (tokens.length === 0) throw new InvalidRequeueRule('requeueon is empty');
  return tokens;
}

function apply(op: string, a: Value, b: Value): Value {
  switch (op) {
    case '||':
      return a === true || b === true;
    case '&&':
      return a === true && b === true;
    case '==':
      return a === b;
    case '!=':
      return a !== b;
    case '<':
      return a < b;
    case '>':
      return a > b;
    case '<=':
      return a <= b;
    case '>=':
      return a >= b;
    case '+':
      return typeof a === 'string' || typeof b === 'string' ? `${a}${b}` : Number(a) + Number(b);
    case '-':
      return Number(a) - Number(b);
    case '*':
      return Number(a) * Number(b);
    default:
      return Number(a) / Number(b);
  }
}

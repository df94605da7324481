/**
 * `scheduler.requeueon`: an expression over `$time1`, `$size1` (a transfer's file) and `$time2`,
 * `$size2` (another transfer's file of the same target) that is true when the second should be sent
 * rather than the first (the reference evaluates it as JavaScript). Here it is read by a small
 * grammar of its own, never evaluated as code: numbers, the four variables, `+ - * /`, comparisons
 * (`< <= > >= == !=`), `&& || !`, parentheses, `true` and `false`. Times are milliseconds.
 */
export interface RequeueFile {
  transferId: number;
  status: string;
  /** The file's time (`$time`): when it was registered. */
  time: number;
  size: number;
  scheduledAt: Date;
}

type Value = number | boolean;
const TOKEN = /\s*(\$(?:time|size)[12]|\d+(?:\.\d+)?|true|false|&&|\|\||[<>!=]=|[-+*/()<>!])/y;

function tokens(text: string): string[] | null {
  const out: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    if (/^\s*$/.test(text.slice(TOKEN.lastIndex))) break;
    const m = TOKEN.exec(text);
    if (!m) return null;
    out.push(m[1]!);
  }
  return out;
}

function evaluate(tokenList: string[], vars: Record<string, number>): Value {
  let i = 0;
  const peek = () => tokenList[i];
  const take = () => tokenList[i++];
  const num = (v: Value) => (typeof v === 'number' ? v : v ? 1 : 0);
  const atom = (): Value => {
    const t = take();
    if (t === undefined) throw new Error('unexpected end');
    if (t === '(') {
      const v = or();
      if (take() !== ')') throw new Error("')' expected");
      return v;
    }
    if (t === '!') return !atom();
    if (t === '-') return -num(atom());
    if (t === 'true' || t === 'false') return t === 'true';
    if (t.startsWith('$')) return vars[t.slice(1)]!;
    if (/^\d/.test(t)) return Number(t);
    throw new Error(`unexpected '${t}'`);
  };
  const product = (): Value => {
    let v = atom();
    while (peek() === '*' || peek() === '/') v = take() === '*' ? num(v) * num(atom()) : num(v) / num(atom());
    return v;
  };
  const sum = (): Value => {
    let v = product();
    while (peek() === '+' || peek() === '-') v = take() === '+' ? num(v) + num(product()) : num(v) - num(product());
    return v;
  };
  const COMPARE: Record<string, (a: number, b: number) => boolean> = {
    '<': (a, b) => a < b,
    '<=': (a, b) => a <= b,
    '>': (a, b) => a > b,
    '>=': (a, b) => a >= b,
    '==': (a, b) => a === b,
    '!=': (a, b) => a !== b,
  };
  const compare = (): Value => {
    const v = sum();
    const op = peek();
    if (op === undefined || !(op in COMPARE)) return v;
    take();
    return COMPARE[op]!(num(v), num(sum()));
  };
  const and = (): Value => {
    let v = compare();
    while (peek() === '&&') {
      take();
      const w = compare();
      v = Boolean(v) && Boolean(w);
    }
    return v;
  };
  const or = (): Value => {
    let v = and();
    while (peek() === '||') {
      take();
      const w = and();
      v = Boolean(v) || Boolean(w);
    }
    return v;
  };
  const result = or();
  if (i !== tokenList.length) throw new Error(`unexpected '${tokenList[i]}'`);
  return result;
}

/** Why the rule cannot be read, or null when it can. */
export function requeueOnProblem(rule: string): string | null {
  const list = tokens(rule);
  if (list === null || list.length === 0) return 'an expression over $time1, $time2, $size1 and $size2 expected';
  try {
    evaluate(list, { time1: 0, time2: 0, size1: 0, size2: 0 });
    return null;
  } catch (e) {
    return `an expression over $time1, $time2, $size1 and $size2 expected: ${(e as Error).message}`;
  }
}

/** Whether `second` should be sent rather than `first` (a rule that cannot be read says no, as in the reference). */
export function prefers(rule: string, first: RequeueFile, second: RequeueFile): boolean {
  const list = tokens(rule);
  if (list === null) return false;
  try {
    const vars = { time1: first.time, size1: first.size, time2: second.time, size2: second.size };
    return evaluate(list, vars) === true;
  } catch {
    return false;
  }
}

const ALREADY_PROCESSED = new Set(['DONE', 'EXEC', 'RETR']);

/**
 * The transfer of the same target that wins over `current` (which then goes to HOLD), or null, as
 * the reference's scheduler decides it (§1.4 step 6): another whose file the rule prefers and which
 * does not lose to the current one in turn; among even ones, one already sent, being sent or
 * retried; otherwise the one with the highest id.
 */
export function requeueWinner(rule: string, current: RequeueFile, others: RequeueFile[]): RequeueFile | null {
  const candidates = others.filter((o) => o.transferId !== current.transferId && !prefers(rule, o, current));
  if (candidates.length === 0) return null;
  const better = candidates.find((o) => prefers(rule, current, o));
  if (better) return better;
  const retry = current.status === 'RETR';
  const running = candidates.filter((o) => ALREADY_PROCESSED.has(o.status));
  if (!retry && running.length > 0) return running[0]!;
  const field = retry ? running : candidates;
  if (retry && field.length === 0) return null;
  const highest = field.reduce((a, b) => (b.transferId > a.transferId ? b : a), current);
  return highest.transferId === current.transferId ? null : highest;
}

/** The reference's comment of a transfer held for a duplicate. */
export function duplicateComment(rule: string, winner: RequeueFile): string {
  const dated = winner.scheduledAt.toISOString().replace('T', ' ').replace('Z', '');
  const found = `Duplicate file found dated ${dated} sized ${winner.size} bytes`;
  return `${found} (DataTransferId=${winner.transferId}) with rule '${rule}' false`;
}

/** The waiting transfers (of one destination and target) that another one displaces, with their comment. */
export function displacedBy(rule: string, files: RequeueFile[]): Array<{ transferId: number; comment: string }> {
  const held: Array<{ transferId: number; comment: string }> = [];
  for (const file of files) {
    if (file.status !== 'WAIT') continue;
    const winner = requeueWinner(rule, file, files);
    if (winner) held.push({ transferId: file.transferId, comment: duplicateComment(rule, winner) });
  }
  return held;
}

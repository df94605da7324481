import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type FileOperation, mostOpenAtOnce, type WriteSpan } from '../test/support/servers/sshd.ts';

/**
 * What `npm run chaos` checks once every transfer is DONE: each transfer's history against what
 * the sshd's sftp-server logged for its file, and the files written at once per host.
 */

export interface HistoryRow {
  status: string;
  comment: string | null;
}

/** One claim of a transfer and what was written after it, up to the next claim. */
interface Attempt {
  number: number;
  rows: HistoryRow[];
}

const FORCED_PUT = 'Requeued by a forced put';

/** A transfer's history cut at each claim (an EXEC row starts attempt 1, 2, ...). */
function attemptsOf(history: HistoryRow[]) {
  const attempts: Attempt[] = [];
  for (const row of history) {
    if (row.status === 'EXEC') attempts.push({ number: attempts.length + 1, rows: [] });
    attempts.at(-1)?.rows.push(row);
  }
  return attempts;
}

/** `<final>.<transfer>-<attempt>.tmp`, the temporary name of one attempt, split up. */
export function temporaryName(file: string) {
  const m = /^(.+)\.(\d+)-(\d+)\.tmp$/.exec(file);
  return m ? { final: m[1]!, transfer: Number(m[2]), attempt: Number(m[3]) } : null;
}

export interface TransferVerdict {
  problems: string[];
  /** Renames into place by attempts since the newest put whose DONE was never written (delivered again). */
  deliveredAgain: number;
}

/**
 * Since the newest put of the transfer: exactly one DONE, or one more for each time an operator
 * held it right after it was DONE (a requeue then sends it again, as asked). At the server: each
 * attempt renamed into place at most once, none that failed did, and the last rename into the
 * final name was by the attempt the database says delivered it.
 */
export function checkTransfer(
  id: number,
  finalPath: string,
  history: HistoryRow[],
  renames: FileOperation[],
): TransferVerdict {
  const problems: string[] = [];
  const newestPut = history.findLastIndex((r) => r.comment === FORCED_PUT);
  const sincePut = history.slice(newestPut + 1);
  const dones = sincePut.filter((r) => r.status === 'DONE').length;
  const heldWhenDone = sincePut.filter((r, i) => r.status === 'HOLD' && sincePut[i - 1]?.status === 'DONE').length;
  if (dones !== 1 + heldWhenDone) {
    problems.push(`transfer ${id}: ${dones} DONE since its newest put, ${1 + heldWhenDone} expected`);
  }
  if (history.at(-1)?.status !== 'DONE') problems.push(`transfer ${id}: its history ends ${history.at(-1)?.status}`);

  const attempts = attemptsOf(history);
  const claimedBeforePut = history.slice(0, newestPut + 1).filter((r) => r.status === 'EXEC').length;
  const delivering = attempts.filter((a) => a.rows.some((r) => r.status === 'DONE')).map((a) => a.number);
  const failed = new Set(attempts.filter((a) => a.rows.some((r) => r.status === 'STOP')).map((a) => a.number));
  const renamedBy = renames.map((op) => temporaryName(op.path));
  const counts = new Map<number, number>();
  for (const [i, from] of renamedBy.entries()) {
    if (!from || from.transfer !== id || from.final !== finalPath) {
      problems.push(`transfer ${id}: ${renames[i]!.path} renamed into ${finalPath}`);
      continue;
    }
    counts.set(from.attempt, (counts.get(from.attempt) ?? 0) + 1);
    if (failed.has(from.attempt)) problems.push(`transfer ${id}: attempt ${from.attempt} failed yet renamed`);
  }
  for (const [attempt, n] of counts) if (n > 1) problems.push(`transfer ${id}: attempt ${attempt} renamed ${n} times`);
  const last = renamedBy.at(-1)?.attempt;
  if (last === undefined || last !== delivering.at(-1)) {
    problems.push(`transfer ${id}: last renamed by attempt ${last}, DONE by attempt ${delivering.at(-1)}`);
  }
  const deliveredAgain = [...counts.keys()].filter((a) => a > claimedBeforePut && !delivering.includes(a)).length;
  return { problems, deliveredAgain };
}

/**
 * The most files receiving bytes at once among the temporary files `which` selects: each from its
 * open to its last write request, as sftp-server logged them. A paused mover's session keeps its
 * file open while another attempt may own the transfer; what matters is that it writes no more.
 */
export function mostWritingAtOnce(spans: WriteSpan[], which: (span: WriteSpan) => boolean) {
  return mostOpenAtOnce(
    spans.map((s) => ({ ...s, closed: s.lastWrite ?? s.opened })),
    which,
  );
}

/** The spans receiving bytes at the busiest moment among those `which` selects (to explain a failure). */
export function busiestMoment(spans: WriteSpan[], which: (span: WriteSpan) => boolean) {
  const writing = spans.filter(which).map((s) => ({ ...s, closed: s.lastWrite ?? s.opened }));
  let best: WriteSpan[] = [];
  for (const s of writing) {
    const alive = writing.filter((o) => o.opened <= s.opened && o.closed >= s.opened);
    if (alive.length > best.length) best = alive;
  }
  return best;
}

/** Files the server opened for writing under a name that is not an attempt's temporary name. */
export const writtenUnderFinalNames = (spans: WriteSpan[]) =>
  spans.filter((s) => temporaryName(path.basename(s.path)) === null).map((s) => s.path);

export interface ExpectedFile {
  /** Its final path on the host. */
  file: string;
  md5: string;
  version: number;
}

export interface Deliveries {
  transfers: Array<{ id: number; target: string }>;
  histories: Map<number, HistoryRow[]>;
  /** What sftp-server logged, and the files it opened for writing. */
  operations: FileOperation[];
  spans: WriteSpan[];
  /** By target: the newest source put for it. */
  expected: Map<string, ExpectedFile>;
  hostDirs: string[];
  /** The destination (an index) a final or temporary path belongs to. */
  destinationOf: (file: string) => number;
  destinations: number;
  limits: { host: number; destination: number };
  log: (line: string) => void;
}

/** Every check of a run once its transfers are DONE; a failure found is explained in the log. */
export function verifyDeliveries(d: Deliveries) {
  const failures: string[] = [];
  // A rename sftp-server refused (a stale attempt's, whose temporary file the next attempt removed) moved nothing.
  const renames = d.operations.filter((op) => op.kind === 'rename' && op.failed === undefined);
  const historyOf = (file: string) => JSON.stringify(d.histories.get(temporaryName(file)?.transfer ?? -1));
  let deliveredAgain = 0;
  for (const t of d.transfers) {
    const want = d.expected.get(t.target);
    if (!want) {
      failures.push(`transfer ${t.id}: ${t.target} was never put`);
      continue;
    }
    const into = renames.filter((op) => op.to === want.file);
    const verdict = checkTransfer(t.id, want.file, d.histories.get(t.id) ?? [], into);
    failures.push(...verdict.problems);
    if (verdict.problems.length > 0) explainTransfer(d, t.id, want.file);
    deliveredAgain += verdict.deliveredAgain;
    if (!fs.existsSync(want.file)) failures.push(`${t.target} missing`);
    else if (md5Of(want.file) !== want.md5) failures.push(`${t.target} is not its version ${want.version}`);
  }

  const finals = new Set([...d.expected.values()].map((e) => e.file));
  const strays = d.hostDirs
    .flatMap((dir) => fs.readdirSync(dir).map((f) => path.join(dir, f)))
    .filter((f) => !finals.has(f));
  if (strays.length > 0) failures.push(`${strays.length} files left besides the deliveries, e.g. ${strays[0]}`);
  for (const stray of strays.slice(0, 3)) {
    const touched = d.operations.filter((op) => op.path === stray || op.to === stray);
    d.log(
      `chaos: left ${path.basename(stray)}: ${JSON.stringify(touched.map((o) => [o.position, o.session, o.kind]))}`,
    );
    d.log(`chaos:   its history: ${historyOf(stray)}`);
  }
  const underFinal = writtenUnderFinalNames(d.spans);
  if (underFinal.length > 0) failures.push(`${underFinal.length} files written under their final name`);

  const onHost = (dir: string) => (s: WriteSpan) => s.path.startsWith(`${dir}/`);
  const perHost = d.hostDirs.map((dir) => mostWritingAtOnce(d.spans, onHost(dir)));
  const perDestination = Array.from({ length: d.destinations }, (_, i) =>
    mostWritingAtOnce(d.spans, (s) => d.destinationOf(s.path) === i),
  );
  const mostPerHost = Math.max(...perHost);
  const mostPerDestination = Math.max(...perDestination);
  if (mostPerHost > d.limits.host) {
    failures.push(`a host had ${mostPerHost} files written at once`);
    for (const s of busiestMoment(d.spans, onHost(d.hostDirs[perHost.indexOf(mostPerHost)]!))) {
      const then = d.operations.filter((op) => op.session === s.session && op.position >= s.opened).slice(0, 8);
      const shown = then.map((o) => [o.position, o.kind, path.basename(o.path)]);
      d.log(`chaos: writing at once: ${JSON.stringify(s)}; then ${JSON.stringify(shown)}`);
      d.log(`chaos:   its history: ${historyOf(s.path)}`);
    }
  }
  if (mostPerDestination > d.limits.destination) {
    failures.push(`a destination had ${mostPerDestination} files written at once`);
  }
  return { failures, deliveredAgain, mostPerHost, mostPerDestination };
}

/** What the server logged for a transfer's files, and its history, to explain a failed check. */
function explainTransfer(d: Deliveries, id: number, finalPath: string) {
  const touched = d.operations.filter(
    (op) => op.path === finalPath || op.to === finalPath || temporaryName(op.path)?.final === finalPath,
  );
  const shown = touched.map((o) => [o.position, o.session, o.kind, path.basename(o.path), o.failed ?? 'ok']);
  d.log(`chaos:   transfer ${id} at the server: ${JSON.stringify(shown)}`);
  d.log(`chaos:   its history: ${JSON.stringify(d.histories.get(id))}`);
}

function md5Of(file: string) {
  return createHash('md5').update(fs.readFileSync(file)).digest('hex');
}

import fs from 'node:fs';
import readline from 'node:readline';
import { ingestAll } from '../../core/monitoring/handlers.ts';
import type { StepNotification } from '../../core/monitoring/model.ts';
import { parseNotificationLine } from '../../core/monitoring/notification-line.ts';
import type { Ports } from '../../core/ports.ts';

/**
 * Notifications written per transaction: large enough that the statements' round trips vanish
 * against the rows, small enough that a chunk's parameters stay a few hundred kilobytes.
 */
export const CHUNK = 5_000;
const PROGRESS_EVERY = 10_000;
/** A terminal's progress bar is redrawn at most this often. */
const REDRAW_MS = 250;
const BAR_WIDTH = 30;

export interface ImportOptions {
  /** Notifications per transaction (the CLI's default: CHUNK). */
  chunk?: number;
  /** Given on a terminal: a progress bar is drawn with it instead of progress lines. */
  tty?: (text: string) => void;
  /** Least milliseconds between two redraws of the bar (default: REDRAW_MS). */
  redrawMs?: number;
  /** False leaves the statistics as they are (the benchmark's summary before they are refreshed). */
  analyze?: boolean;
}

/** Streams an NDJSON file of notifications; bad lines are reported (on stderr) and skipped. */
export async function importNotifications(
  ports: Ports,
  file: string,
  report: (line: string) => void,
  options: ImportOptions = {},
) {
  const counts = { accepted: 0, ignored: 0, refused: 0, bad: 0 };
  const chunk = options.chunk ?? CHUNK;
  const input = fs.createReadStream(file, 'utf8');
  const lines = readline.createInterface({ input, crlfDelay: Infinity });
  const progress = options.tty
    ? progressBar(options.tty, options.redrawMs ?? REDRAW_MS, fs.statSync(file).size, () => input.bytesRead)
    : null;
  let pending: StepNotification[] = [];
  // The next chunk is read and parsed while the database writes this one; chunks still commit one
  // after the other, in the file's order, so each sees the states the previous ones left.
  let writing: Promise<void> = Promise.resolve();
  const flush = async () => {
    const notifications = pending;
    pending = [];
    await writing;
    if (notifications.length === 0) return;
    writing = ingestAll(ports, notifications).then((outcomes) => {
      for (const outcome of outcomes) counts[outcome.result]++;
    });
    // A failed chunk must not be an unhandled rejection while the next one is read.
    writing.catch(() => undefined);
  };
  let number = 0;
  for await (const line of lines) {
    number++;
    if (line.trim() === '') continue;
    const parsed = parseNotificationLine(line, ports.clock());
    if (!parsed.ok) {
      counts.bad++;
      progress?.clear();
      report(`line ${number}: ${parsed.problem}; skipped\n`);
      continue;
    }
    pending.push(parsed.value);
    if (pending.length >= chunk) await flush();
    if (progress) progress.update(number);
    else if (number % PROGRESS_EVERY === 0) report(`${number} lines read\n`);
  }
  await flush();
  await writing;
  progress?.clear();
  // The planner's statistics of the monitoring tables lag far behind a large import until
  // autovacuum gets to them, and the summary's plan with them; refreshing them samples rows only.
  if (counts.accepted > 0 && options.analyze !== false) await ports.repos.monitoring.analyze();
  return counts;
}

function progressBar(write: (text: string) => void, redrawMs: number, size: number, bytesRead: () => number) {
  const started = Date.now();
  let drawn = -Infinity;
  let visible = false;
  return {
    update(lines: number) {
      const now = Date.now();
      if (now - drawn < redrawMs) return;
      drawn = now;
      const share = size === 0 ? 1 : Math.min(1, bytesRead() / size);
      const full = Math.round(share * BAR_WIDTH);
      const rate = Math.round(lines / Math.max(0.001, (now - started) / 1000));
      write(
        `\r[${'#'.repeat(full)}${'.'.repeat(BAR_WIDTH - full)}] ${Math.floor(share * 100)}% ` +
          `${lines} lines, ${rate}/s\x1b[K`,
      );
      visible = true;
    },
    clear() {
      if (visible) write('\r\x1b[K');
      visible = false;
    },
  };
}

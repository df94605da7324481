import fs from 'node:fs';
import readline from 'node:readline';
import { ingest } from '../../core/monitoring/handlers.ts';
import { parseNotificationLine } from '../../core/monitoring/notification-line.ts';
import type { Ports } from '../../core/ports.ts';

const PROGRESS_EVERY = 10_000;

/** Streams an NDJSON file of notifications; bad lines are reported (on stderr) and skipped. */
export async function importNotifications(ports: Ports, file: string, report: (line: string) => void) {
  const counts = { accepted: 0, ignored: 0, refused: 0, bad: 0 };
  const lines = readline.createInterface({ input: fs.createReadStream(file, 'utf8'), crlfDelay: Infinity });
  let number = 0;
  for await (const line of lines) {
    number++;
    if (line.trim() === '') continue;
    const parsed = parseNotificationLine(line, ports.clock());
    if (!parsed.ok) {
      counts.bad++;
      report(`line ${number}: ${parsed.problem}; skipped\n`);
      continue;
    }
    counts[(await ingest(ports, parsed.value)).result]++;
    if (number % PROGRESS_EVERY === 0) report(`${number} lines read\n`);
  }
  return counts;
}

import fs from 'node:fs';
import type { EventSink } from '../../core/ports.ts';

/** Event entries appended to ECPDS_EVENT_LOG, or written to stdout when none is set. */
export function eventSink(file: string | null): { sink: EventSink; close(): Promise<void> } {
  if (!file) return { sink: { write: (entry) => void process.stdout.write(`${entry}\n`) }, close: async () => {} };
  const stream = fs.createWriteStream(file, { flags: 'a' });
  return {
    sink: { write: (entry) => void stream.write(`${entry}\n`) },
    close: () => new Promise<void>((resolve) => stream.end(resolve)),
  };
}

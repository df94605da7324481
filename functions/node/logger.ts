import { pino } from 'pino';
import type { Logger } from '../../core/ports.ts';

/**
 * Keys whose values never reach a log line, should a caller ever pass one: callers do not log
 * secrets or Authorization values, this is the net under that rule. Top-level keys and request
 * headers only; a wildcard path would run the censor over every value of every line.
 */
const SECRET_KEYS = ['authorization', 'cookie', 'secret', 'password', 'token', 'apiKey', 'secretKey'];
const REDACTED_PATHS = [
  ...SECRET_KEYS,
  ...SECRET_KEYS.map((key) => key[0]!.toUpperCase() + key.slice(1)),
  ...['authorization', 'cookie', 'proxy-authorization'].map((header) => `headers["${header}"]`),
];

/**
 * One JSON object per line (pino): `{"level":"info","time":"<ISO>","msg":"...",...fields}`.
 * `write` takes each line: on the server the batched stdout (below), in the CLI stderr.
 */
export function jsonLogger(write: (line: string) => void = (l) => process.stdout.write(l)): Logger {
  const log = pino(
    {
      // No pid or hostname: a line holds what the caller logged, with its level and time.
      base: null,
      formatters: { level: (label) => ({ level: label }) },
      timestamp: isoTime(),
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    },
    { write },
  );
  // The message goes into the object, so that it comes before the fields (pino puts it last).
  return {
    info: (msg, fields = {}) => log.info({ msg, ...fields }),
    warn: (msg, fields = {}) => log.warn({ msg, ...fields }),
    error: (msg, fields = {}) => log.error({ msg, ...fields }),
  };
}

/** pino's ISO time, formatted once per millisecond: under load many lines share one. */
function isoTime() {
  let lastMs = NaN;
  let last = '';
  return () => {
    const ms = Date.now();
    if (ms !== lastMs) {
      lastMs = ms;
      last = `,"time":"${new Date(ms).toISOString()}"`;
    }
    return last;
  };
}

/**
 * Text for stdout gathered over one turn of the event loop and written at once. Writes to a
 * file or pipe are synchronous system calls; one per request line cost more than the request.
 * Everything the server prints goes through here, so lines keep their order, and what is
 * pending is written before the process exits. (pino's own destination, sonic-boom, would
 * order log lines only among themselves, not with the bootstrap secret notice.)
 */
export function batchedStdout(out: NodeJS.WritableStream = process.stdout) {
  let pending: string[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    out.write(text);
  };
  process.once('exit', flush);
  return {
    write(text: string) {
      pending.push(text);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush,
  };
}

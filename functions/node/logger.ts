import type { Logger } from '../../core/ports.ts';

/** One JSON object per line on stdout. Callers never pass secrets or Authorization values. */
export function jsonLogger(write: (line: string) => void = (l) => process.stdout.write(l)): Logger {
  // Formatting the time cost as much as the rest of a line; under load many lines share a millisecond.
  let lastMs = NaN;
  let lastTime = '';
  const time = () => {
    const ms = Date.now();
    if (ms !== lastMs) {
      lastMs = ms;
      lastTime = new Date(ms).toISOString();
    }
    return lastTime;
  };
  const log = (level: string) => {
    const head = `,"level":${JSON.stringify(level)},"msg":`;
    // The same line as JSON.stringify({ time, level, msg, ...fields }), without copying fields.
    return (msg: string, fields: Record<string, unknown> = {}) => {
      const rest = JSON.stringify(fields);
      write(`{"time":"${time()}"${head}${JSON.stringify(msg)}${rest.length > 2 ? `,${rest.slice(1)}` : '}'}\n`);
    };
  };
  return { info: log('info'), warn: log('warn'), error: log('error') };
}

/**
 * Text for stdout gathered over one turn of the event loop and written at once. Writes to a
 * file or pipe are synchronous system calls; one per request line cost more than the request.
 * Everything the server prints goes through here, so lines keep their order, and what is
 * pending is written before the process exits.
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

import { createHash } from 'node:crypto';
import { readDuration } from '../../core/dissemination/method-options.ts';
import type { TransferMethod } from '../../core/dissemination/methods.ts';

/**
 * The `test` method: reads the whole source, as a real send would, and delivers it nowhere.
 * `test.delay` waits before answering, `test.errorsEvery` = N fails every Nth send of this mover,
 * `test.error` is the message of a failure (`test.fail = "yes"` fails every send).
 */
export function testMethod(): TransferMethod {
  let sends = 0;
  return {
    async send(host, file, source, signal) {
      sends++;
      const hash = createHash('md5');
      let sent = 0;
      for await (const chunk of source) {
        signal.throwIfAborted();
        hash.update(chunk);
        sent += chunk.byteLength;
      }
      const delay = readDuration(host.options.raw.get('delay'), 0) ?? 0;
      if (delay > 0) await abortableDelay(delay, signal);
      const every = Number(host.options.raw.get('errorsEvery') ?? 0);
      const fail = host.options.raw.get('fail')?.toLowerCase() === 'yes' || (every > 0 && sends % every === 0);
      if (fail) throw new Error(host.options.raw.get('error') ?? `Test failure (send ${sends})`);
      if (sent !== file.size) throw new Error(`Source changed size: ${sent} bytes read, ${file.size} registered`);
      return { sent, md5: hash.digest('hex') };
    },
    async close() {},
  };
}

function abortableDelay(ms: number, signal: AbortSignal) {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

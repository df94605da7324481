import { countingMd5 } from '../../core/dissemination/deliver.ts';
import { readDuration } from '../../core/dissemination/method-options.ts';
import type { TransferMethod } from '../../core/dissemination/methods.ts';
import { nodeHashing } from '../node/hashing.ts';

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
      const counted = countingMd5(nodeHashing, source, file.md5);
      for await (const _ of counted.stream) signal.throwIfAborted();
      const sent = counted.bytes();
      const delay = readDuration(host.options.raw.get('delay'), 0) ?? 0;
      if (delay > 0) await abortableDelay(delay, signal);
      const every = Number(host.options.raw.get('errorsEvery') ?? 0);
      const fail = host.options.raw.get('fail')?.toLowerCase() === 'yes' || (every > 0 && sends % every === 0);
      if (fail) throw new Error(host.options.raw.get('error') ?? `Test failure (send ${sends})`);
      if (sent !== file.size) throw new Error(`Source changed size: ${sent} bytes read, ${file.size} registered`);
      return { sent, md5: counted.md5() };
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

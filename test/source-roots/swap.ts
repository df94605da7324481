import { Worker } from 'node:worker_threads';

/**
 * Swaps the directory `dir` for a symlink to `elsewhere` and back, in a tight loop on a thread
 * of its own, until stopped: the race a local source's checks must win every time. Answers how
 * many swaps it made.
 */
export function swapDirectoryForLink(dir: string, elsewhere: string) {
  const stop = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(
    `
    const fs = require('node:fs');
    const { dir, elsewhere, stop } = require('node:worker_threads').workerData;
    const parked = dir + '.parked';
    let swaps = 0;
    while (Atomics.load(stop, 0) === 0) {
      fs.renameSync(dir, parked);
      fs.symlinkSync(elsewhere, dir);
      fs.unlinkSync(dir);
      fs.renameSync(parked, dir);
      swaps++;
    }
    require('node:worker_threads').parentPort.postMessage(swaps);
    `,
    { eval: true, workerData: { dir, elsewhere, stop } },
  );
  const done = new Promise<number>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    async stop() {
      Atomics.store(stop, 0, 1);
      const swaps = await done;
      await worker.terminate();
      return swaps;
    },
  };
}

/** Runs `task` `times` times, `concurrency` at once. */
export async function inParallel(times: number, concurrency: number, task: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < times) await task(next++);
    }),
  );
}

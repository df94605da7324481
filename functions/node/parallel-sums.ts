import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { type Summed, type Summing, summing } from '../../core/retrieval/digests.ts';
import { nodeHashing } from './hashing.ts';

/**
 * Sums large files on worker threads: the thread that reads and writes the bytes only copies each
 * megabyte once into shared memory, while MD5 and SHA-512 are computed beside it, each on its own
 * thread. Small files are summed in place, where handing them over would cost more than it saves.
 */
export function parallelSumming(options: { minBytes?: number } = {}): Summing {
  const minBytes = options.minBytes ?? 4 * SLOT_BYTES;
  return (stream, size) => (size < minBytes ? summing(stream, nodeHashing) : summedOnThreads(stream));
}

const SLOT_BYTES = 1 << 20;
// Per file: enough for the threads to hash some slots while the stream fills others; bounds its memory.
const SLOTS = 4;

// Evaluated as CommonJS in each thread: one hash per file it is given, updated from shared memory.
const HASHING_THREAD = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const hashes = new Map();
parentPort.on('message', (m) => {
  if (m.start) hashes.set(m.job, createHash(m.start));
  else if (m.slot !== undefined) {
    hashes.get(m.job).update(new Uint8Array(m.buffer, 0, m.length));
    parentPort.postMessage({ job: m.job, slot: m.slot });
  } else {
    const hash = hashes.get(m.job);
    hashes.delete(m.job);
    if (m.end) parentPort.postMessage({ job: m.job, digest: hash.digest(m.end) });
  }
});
`;

interface Job {
  released(slot: number): void;
  digested(digest: string): void;
  failed(error: Error): void;
}

class HashingThread {
  // No execArgv of the process (such as --input-type=module): the thread's code is plain CommonJS.
  private readonly worker = new Worker(HASHING_THREAD, { eval: true, execArgv: [] });
  private readonly jobs = new Map<number, Job>();
  broken: Error | null = null;

  constructor() {
    this.worker.on('message', (m: { job: number; slot?: number; digest?: string }) => {
      const job = this.jobs.get(m.job);
      if (m.slot !== undefined) job?.released(m.slot);
      else if (m.digest !== undefined) job?.digested(m.digest);
    });
    this.worker.on('error', (error) => this.fail(error));
    this.worker.on('exit', (code) => this.fail(new Error(`hashing thread exited with code ${code}`)));
    this.worker.unref();
  }

  /** A thread with files to sum keeps the process running, and an idle one never does. */
  add(job: number, handlers: Job) {
    this.jobs.set(job, handlers);
    if (this.jobs.size === 1) this.worker.ref();
  }

  remove(job: number) {
    if (this.jobs.delete(job) && this.jobs.size === 0) this.worker.unref();
  }

  post(message: object) {
    this.worker.postMessage(message);
  }

  private fail(error: Error) {
    this.broken ??= error;
    for (const job of this.jobs.values()) job.failed(error);
    this.jobs.clear();
    this.worker.unref();
  }
}

const threads: HashingThread[] = [];
let nextJob = 0;

/** Two threads of the pool for a new file, in turn: a pool as wide as the machine, at least two. */
function threadsFor(job: number): [HashingThread, HashingThread] {
  const width = Math.max(2, Math.min(8, os.availableParallelism()));
  const pick = (i: number) => {
    let thread = threads[i];
    if (!thread || thread.broken) {
      thread = new HashingThread();
      threads[i] = thread;
    }
    return thread;
  };
  return [pick((2 * job) % width), pick((2 * job + 1) % width)];
}

function summedOnThreads(stream: AsyncIterable<Uint8Array>): Summed {
  const job = nextJob++;
  const hashers = threadsFor(job);
  const algorithms = [
    ['md5', 'hex'],
    ['sha512', 'base64'],
  ] as const;
  const slots = Array.from({ length: SLOTS }, () => new SharedArrayBuffer(SLOT_BYTES));
  // How many threads still read each slot; a slot is filled again only once both are done with it.
  const readers = new Array<number>(SLOTS).fill(0);
  const digests: (string | undefined)[] = [undefined, undefined];
  let failure: Error | null = null;
  let waiting: (() => void) | null = null;
  const settle = () => {
    waiting?.();
    waiting = null;
  };
  for (const [i, thread] of hashers.entries()) {
    thread.add(job, {
      released: (slot) => {
        readers[slot]! -= 1;
        settle();
      },
      digested: (digest) => {
        digests[i] = digest;
        thread.remove(job);
        settle();
      },
      failed: (error) => {
        failure = error;
        settle();
      },
    });
    thread.post({ job, start: algorithms[i]![0] });
  }

  const until = async (done: () => boolean) => {
    while (!done()) {
      if (failure) throw failure;
      await new Promise<void>((resolve) => {
        waiting = resolve;
      });
    }
    if (failure) throw failure;
  };
  let size = 0;
  let slot = 0;
  let filled = 0;
  const hand = () => {
    readers[slot] = 2;
    for (const thread of hashers) thread.post({ job, slot, buffer: slots[slot], length: filled });
    slot = (slot + 1) % SLOTS;
    filled = 0;
  };
  let ended = false;

  async function* passed() {
    try {
      for await (const chunk of stream) {
        for (let at = 0; at < chunk.byteLength; ) {
          await until(() => readers[slot] === 0);
          const part = chunk.subarray(at, at + SLOT_BYTES - filled);
          new Uint8Array(slots[slot]!).set(part, filled);
          filled += part.byteLength;
          at += part.byteLength;
          if (filled === SLOT_BYTES) hand();
        }
        size += chunk.byteLength;
        yield chunk;
      }
      // The slot in the making was free when its filling began.
      if (filled > 0) hand();
      for (const [i, thread] of hashers.entries()) thread.post({ job, end: algorithms[i]![1] });
      ended = true;
    } finally {
      if (!ended) {
        // Read no further: the threads forget the file, and nothing waits for its digests.
        for (const thread of hashers) {
          thread.post({ job, drop: true });
          thread.remove(job);
        }
      }
    }
  }

  return {
    stream: passed(),
    async sums() {
      await until(() => digests.every((d) => d !== undefined));
      return { size, md5: digests[0]!, sha512: digests[1]! };
    },
  };
}

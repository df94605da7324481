import type { FilterCodecs } from '../../core/dissemination/filters.ts';

/**
 * The filters a Worker applies: gzip, through the runtime's CompressionStream (no other format
 * has one there). A consumer that stops reading cancels the source.
 */
export const workerFilters: FilterCodecs = {
  gzip: (source) => chunksOf(streamOf(source).pipeThrough(new CompressionStream('gzip'))),
};

function streamOf(source: AsyncIterable<Uint8Array>) {
  const chunks = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel(reason) {
      await chunks.return?.(reason);
    },
  });
}

async function* chunksOf(stream: ReadableStream<Uint8Array>) {
  const reader = stream.getReader();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield value;
    }
    finished = true;
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
  }
}

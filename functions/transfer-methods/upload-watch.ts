import type { MethodOptions } from '../../core/dissemination/method-options.ts';

/**
 * What the requests of an upload by HTTP (the HTTP and S3 methods) run under: the caller's signal,
 * aborted as well once `ectrans.putTimeOut` has passed, or once the upload has stalled: for
 * `ectrans.streamTimeout`, the connection took no byte of a body, and the server sent no answer
 * and no byte of one. Aborting a request drops its connection before the request's promise
 * settles, so a send that stalled, or that failed and was aborted, has closed its connection by
 * the time it ends. A controller of its own rather than AbortSignal.any, whose signal its sources
 * hold only weakly.
 */
export function uploadWatch(caller: AbortSignal, options: Pick<MethodOptions, 'putTimeoutMs' | 'streamTimeoutMs'>) {
  const controller = new AbortController();
  const fromCaller = () => controller.abort(caller.reason);
  if (caller.aborted) fromCaller();
  else caller.addEventListener('abort', fromCaller, { once: true });
  const { putTimeoutMs, streamTimeoutMs } = options;
  const putTimer =
    putTimeoutMs === null
      ? undefined
      : setTimeout(
          () => controller.abort(new Error(`Transfer timed out after ${putTimeoutMs / 1000} s (ectrans.putTimeOut)`)),
          putTimeoutMs,
        );
  let stallTimer: ReturnType<typeof setTimeout> | undefined;
  const moved = () => {
    clearTimeout(stallTimer);
    stallTimer = setTimeout(() => {
      controller.abort(new Error(`Stalled: no byte moved for ${streamTimeoutMs / 1000} s (ectrans.streamTimeout)`));
    }, streamTimeoutMs);
  };
  moved();
  return {
    signal: controller.signal,
    /** A sign of progress: a body's bytes taken, an answer, a byte of one. */
    moved,
    /** Ends the requests still under way, and drops their connections. */
    abort: (reason: unknown) => controller.abort(reason),
    clear() {
      clearTimeout(putTimer);
      clearTimeout(stallTimer);
      caller.removeEventListener('abort', fromCaller);
    },
  };
}

export type UploadWatch = ReturnType<typeof uploadWatch>;

/** The most of an answer's body read: a failure's reason is its first few hundred characters. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** An answer's body as text (its first 64 KiB), each byte read a sign of progress. */
export async function answerText(response: Response, moved: () => void): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (let bytes = 0; bytes < MAX_ANSWER_BYTES; ) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    moved();
    bytes += value.byteLength;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  return text;
}

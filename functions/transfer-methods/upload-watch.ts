import type { MethodOptions } from '../../core/dissemination/method-options.ts';
import { type ProgressWatch, progressWatch } from '../../core/dissemination/progress-watch.ts';

/**
 * What the requests of an upload by HTTP (the HTTP and S3 methods) run under: the caller's signal,
 * aborted as well once `ectrans.putTimeOut` has passed, or once the upload has stalled: for
 * `ectrans.streamTimeout`, the connection took no byte of a body, and the server sent no answer
 * and no byte of one (each is reported to `moved`). Aborting a request drops its connection before
 * the request's promise settles, so a send that stalled, or that failed and was aborted, has
 * closed its connection by the time it ends.
 */
export const uploadWatch = (caller: AbortSignal, options: Pick<MethodOptions, 'putTimeoutMs' | 'streamTimeoutMs'>) =>
  progressWatch(caller, options);

export type UploadWatch = ProgressWatch;

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

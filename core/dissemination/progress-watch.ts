/**
 * The signal a send runs under: its caller's, aborted as well once `ectrans.putTimeOut` has passed,
 * or once no progress was reported (`moved`) for `ectrans.streamTimeout`. What progress means is
 * the watcher's to say: the mover counts bytes taken from the source, an HTTP upload also its
 * answer. A controller of its own rather than AbortSignal.any: a signal derived that way is held
 * only weakly by its sources, and one that nothing but its own listeners reaches can be collected
 * before it ever aborts. `clear` must be called once the send has ended.
 */
export function progressWatch(caller: AbortSignal, options: { putTimeoutMs: number | null; streamTimeoutMs: number }) {
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
    /** A sign of progress: the stall timer starts again. */
    moved,
    /** Ends what runs under the signal (a failed send's requests still under way). */
    abort: (reason: unknown) => controller.abort(reason),
    clear() {
      clearTimeout(putTimer);
      clearTimeout(stallTimer);
      caller.removeEventListener('abort', fromCaller);
    },
  };
}

export type ProgressWatch = ReturnType<typeof progressWatch>;

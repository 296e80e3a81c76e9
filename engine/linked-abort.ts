/**
 * An abort controller of one's own that also follows an outer signal (the
 * caller's, the worker's shutdown) until it is released. Not AbortSignal.any
 * or AbortSignal.timeout: those keep every combined signal alive as long as the
 * outer signal or the timer lives, which with long calls under load held
 * hundreds of MB; released, this one leaves nothing on the outer signal.
 */
export type LinkedAbort = {
  /** Aborted by `abort`, or with the outer signal's reason while linked. */
  signal: AbortSignal;
  abort(reason: unknown): void;
  /** Stop following the outer signal. */
  release(): void;
};

export function linkedAbort(outer: AbortSignal | undefined): LinkedAbort {
  const controller = new AbortController();
  const onAbort = () => controller.abort(outer?.reason);
  if (outer?.aborted) onAbort();
  else outer?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    abort: (reason) => controller.abort(reason),
    release: () => outer?.removeEventListener('abort', onAbort),
  };
}

/**
 * One outbound call shared by the callers that want its result at the same time (a token
 * fetch): it runs under no caller's signal, so one caller's abort cannot fail it for the
 * others; each caller's own signal ends only that caller's wait. When the last caller has
 * left, the call is aborted (nobody wants its result) and a later caller starts a new one.
 */

export type SharedCall<T> = {
  /** The running call's result, or `interrupted` once the caller's own signal aborts. */
  join(signal: AbortSignal | undefined): Promise<T>;
};

type Running<T> = { result: Promise<T>; waiters: number; stop: AbortController };

/**
 * Share `run` between concurrent callers. `run` gets the call's own signal and bounds itself
 * (a timeout); `interrupted` is what a caller whose signal aborted is given.
 */
export function createSharedCall<T>(
  run: (signal: AbortSignal) => Promise<T>,
  interrupted: T,
): SharedCall<T> {
  let running: Running<T> | undefined;
  const start = (): Running<T> => {
    const stop = new AbortController();
    const call: Running<T> = { waiters: 0, stop, result: Promise.resolve(interrupted) };
    call.result = run(stop.signal).finally(() => {
      if (running === call) running = undefined;
    });
    return call;
  };
  const abandon = (call: Running<T>) => {
    call.stop.abort(new Error('no caller waits'));
    if (running === call) running = undefined;
  };
  return {
    join(signal) {
      if (signal?.aborted) return Promise.resolve(interrupted);
      running ??= start();
      return wait(running, signal, interrupted, abandon);
    },
  };
}

function wait<T>(
  call: Running<T>,
  signal: AbortSignal | undefined,
  interrupted: T,
  abandon: (call: Running<T>) => void,
): Promise<T> {
  call.waiters++;
  return new Promise((resolve, reject) => {
    let done = false;
    // Once per caller: its abort and the result may both come.
    const leave = () => {
      signal?.removeEventListener('abort', onAbort);
      if (done) return false;
      done = true;
      call.waiters--;
      return true;
    };
    const onAbort = () => {
      if (!leave()) return;
      if (call.waiters === 0) abandon(call);
      resolve(interrupted);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    call.result.then(
      (value) => leave() && resolve(value),
      (err: unknown) => leave() && reject(err),
    );
  });
}

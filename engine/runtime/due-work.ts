/**
 * Work the store keeps by id until it is done, each piece due at a time (a
 * heartbeat reply to deliver): run here one at a time per id, on a timer
 * for its due time (armed again if it fires early), and found again by a
 * sweep that reads what is still due while this instance knows of any,
 * which catches what no timer holds (a run that failed inside hookgate, a
 * piece another instance left in flight).
 */

/** How many pending pieces a sweep reads per query. */
const SWEEP_PAGE = 500;
/** setTimeout's longest delay: a later time is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/**
 * Most runs a timer starts at once: a sweep after a restart or a change of leader can find many
 * pieces due, and each is a claim, a read and a send to a product that rate-limits. A timer
 * that finds them all busy tries again a little later.
 */
const MAX_RUNNING = 8;
const BUSY_WAIT_MS = 100;

export type DueWorkDeps = {
  /** Do the piece (a no-op when it is not due or not this instance's); may reject. */
  attempt(id: string): Promise<void>;
  /** A page of the pieces still in the store, after `after`, each with when it may next run. */
  pending(limit: number, after?: string): Promise<Array<{ id: string; atMs: number }>>;
  /** True once no new run may start (shutdown). */
  halted(): boolean;
  /** Told when a run rejected (the piece stays in the store: a sweep finds it again). */
  failed(id: string, err: unknown): void;
};

export type DueWork = {
  /** Run a piece now (one run per piece at a time); resolves when it ends, never rejects. */
  run(id: string): Promise<void>;
  /** Run a piece at `atMs`; `replace`: instead of a time a sweep set for it. */
  at(id: string, atMs: number, replace?: boolean): void;
  /** The store may hold pieces to run again: the next sweep reads. */
  mark(): void;
  /** Read what is still due and arm its timers: `always`, or only after a mark. */
  sweep(always?: boolean): Promise<void>;
  /** Cancel the timers (the pieces stay in the store); resolves when no run or read is left. */
  stop(): Promise<void>;
};

/** Create the runner of due work. */
export function createDueWork(deps: DueWorkDeps): DueWork {
  const timers = new Map<string, NodeJS.Timeout>();
  const running = new Map<string, Promise<void>>();
  // Whether the store may hold work for this instance: a sweep reads only then, so an idle
  // instance with nothing due adds no query. True at first: a previous process may have left
  // some. `marks` counts every time it is set, so a read that began before one does not clear it.
  let outstanding = true;
  let marks = 0;
  let sweeping: Promise<void> | undefined;
  let sweepAgain = false;

  function mark(): void {
    outstanding = true;
    marks++;
  }

  function at(id: string, atMs: number, replace = false): void {
    if (deps.halted()) return;
    const existing = timers.get(id);
    if (existing) {
      if (!replace) return;
      clearTimeout(existing);
    }
    const timer = setTimeout(
      () => {
        timers.delete(id);
        // Timers round to the millisecond and may fire just before the wall-clock time.
        if (Date.now() < atMs) at(id, atMs);
        else if (running.size >= MAX_RUNNING && !running.has(id)) at(id, Date.now() + BUSY_WAIT_MS);
        else void run(id);
      },
      Math.min(MAX_TIMER_MS, Math.max(0, atMs - Date.now())),
    );
    timer.unref();
    timers.set(id, timer);
  }

  function run(id: string): Promise<void> {
    const current = running.get(id);
    if (current) return current;
    const attempt = deps
      .attempt(id)
      .catch((err: unknown) => {
        mark();
        deps.failed(id, err);
      })
      .finally(() => running.delete(id));
    running.set(id, attempt);
    return attempt;
  }

  async function readPending(): Promise<void> {
    const marked = marks;
    let after: string | undefined;
    let found = 0;
    for (;;) {
      const page = await deps.pending(SWEEP_PAGE, after);
      found += page.length;
      // One running here is armed again by its own end where it needs to be.
      for (const piece of page) if (!running.has(piece.id)) at(piece.id, piece.atMs);
      if (page.length < SWEEP_PAGE) break;
      after = page[page.length - 1]?.id;
    }
    if (found === 0 && marks === marked) outstanding = false;
  }

  function sweep(always = false): Promise<void> {
    if (always) mark();
    if (deps.halted()) return Promise.resolve();
    if (sweeping) {
      // A read asked for while one runs may need rows written after that one began.
      if (always) sweepAgain = true;
      return sweeping;
    }
    if (!outstanding) return Promise.resolve();
    sweeping = readPending().finally(() => {
      sweeping = undefined;
      if (sweepAgain) {
        sweepAgain = false;
        void sweep().catch(() => undefined);
      }
    });
    return sweeping;
  }

  return {
    run,
    at,
    mark,
    sweep,
    async stop() {
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
      await sweeping?.catch(() => undefined);
      await Promise.all(running.values());
    },
  };
}

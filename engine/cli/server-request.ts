/**
 * Asking the running server for something from the command line (a heartbeat now, a reload):
 * the request goes into the store, the command waits for the server that takes such requests
 * (the leader, on PostgreSQL) to take it, and a request nobody took is taken back, so that a
 * server started later does not act on what nobody asks for any longer. Every
 * call to the store is bounded in time (a database that stops answering must not hold the
 * command, or its request, forever), and an interrupted command takes its request back too.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { configSchema } from '../../schemas/config.ts';
import type { LeaderLease, RuntimeStore } from '../runtime/runtime-store.ts';

// The server looks at once when the store's doorbell rings (every 500 ms where it polls); a
// loaded machine gets ample slack.
const PICKUP_WAIT_MS = 5_000;
const PICKUP_POLL_MS = 100;
// A live instance checks for the lead every second: once a lease runs out, the next leader
// comes within a check or two; this grace also covers one whose checks are slowed down.
const SUCCESSION_MS = 5_000;
// The longest lease any instance may hold (store.leaseSeconds' maximum).
const MAX_LEASE_MS = configSchema.properties.store.properties.leaseSeconds.maximum * 1000;
// The longest any one call to the store may take: opening it, reading the lease, asking, taking
// back. Under the PostgreSQL pool's 10 s wait for a connection, so that a database that stopped
// answering is said to be that, not the pool's own timeout.
export const CALL_LIMIT_MS = 8_000;
// The longest one look at the request may take: one that does not answer is given up and the
// next poll looks again (a server may have taken the request meanwhile).
export const LOOK_LIMIT_MS = 2_000;

/**
 * How long a request waits to be taken: the pick-up, plus, where instances share the
 * store, the time a new leader may still take to come, which ends SUCCESSION_MS after the
 * lead's lease runs out (a leader that died keeps the lead until then; one that stopped gave it
 * up): the longer ago it ran out, the less is left, down to nothing. No lease row is read as one
 * that just ran out (an older hookgate deleted it at its stop). A lease read is taken as the
 * database has it (the instances' leaseSeconds may differ from this command's), up to the
 * longest any may hold; one that could not be read (`undefined`) is waited as a lease of this
 * command's leaseSeconds just renewed. Where one process owns the store, the pick-up only. Pure.
 */
export function pickupWaitMs(lease: LeaderLease | undefined, leaseSeconds: number): number {
  if (lease === undefined) return PICKUP_WAIT_MS + leaseSeconds * 1000 + SUCCESSION_MS;
  if (lease.kind === 'sole') return PICKUP_WAIT_MS;
  const untilLapseMs =
    lease.kind === 'held'
      ? Math.min(lease.leftMs, MAX_LEASE_MS)
      : lease.kind === 'lapsed'
        ? -lease.agoMs
        : 0;
  return PICKUP_WAIT_MS + Math.max(0, untilLapseMs + SUCCESSION_MS);
}

/** How a request ended (askServer). */
export type ServerAsked =
  | { kind: 'taken'; seq: number }
  | { kind: 'not-taken'; waitMs: number }
  /** Not taken (it was taken back), but the last looks failed: the store, not the servers. */
  | { kind: 'unchecked'; err: unknown }
  /** Interrupted (a signal): before asking (nothing asked), or the request was taken back. */
  | { kind: 'interrupted'; asked: boolean }
  /** Not seen taken, and it could not be taken back: a server started later may run it. */
  | { kind: 'left'; seq: number; err: unknown };

type RequestStore = Pick<
  RuntimeStore,
  'leaderLease' | 'request' | 'requestTaken' | 'withdrawRequest'
>;

/** A store call that did not answer in time (its message names no address or credential). */
export class StoreTimeout extends Error {
  constructor(what: string, ms: number) {
    super(`the store did not answer (${what}) within ${Math.round(ms / 1000)} s`);
    this.name = 'StoreTimeout';
  }
}

/** `call`'s answer, or StoreTimeout after `ms` (a late answer or failure is dropped). */
export async function bounded<T>(call: Promise<T>, ms: number, what: string): Promise<T> {
  const timer = new AbortController();
  call.catch(() => undefined);
  try {
    return await Promise.race([
      call,
      sleep(ms, undefined, { signal: timer.signal }).then(() => {
        throw new StoreTimeout(what, ms);
      }),
    ]);
  } finally {
    timer.abort();
  }
}

export const INTERRUPTED = Symbol('interrupted');

/** Resolves with INTERRUPTED once `signal` aborts (never without one). */
export function onInterrupt(signal: AbortSignal | undefined): Promise<typeof INTERRUPTED> {
  return new Promise((resolve) => {
    if (signal?.aborted) resolve(INTERRUPTED);
    signal?.addEventListener('abort', () => resolve(INTERRUPTED), { once: true });
  });
}

/**
 * Ask the server for `kind` and wait for it to take the request; one nobody took is taken back.
 * A failure to ask is thrown: if the database kept the request before its answer was lost (or
 * came too late), it stays, as any request whose answer is lost; the error says so.
 */
export async function askServer(
  store: RequestStore,
  kind: string,
  leaseSeconds: number,
  signal?: AbortSignal,
): Promise<ServerAsked> {
  const interrupted = onInterrupt(signal);
  // Read before asking: a failed read asks nothing it would leave behind, nor does a signal.
  const lease = await Promise.race([
    bounded(store.leaderLease(), CALL_LIMIT_MS, 'reading the lead').catch(() => undefined),
    interrupted,
  ]);
  if (lease === INTERRUPTED || signal?.aborted) return { kind: 'interrupted', asked: false };
  const waitMs = pickupWaitMs(lease, leaseSeconds);
  // Asking is not given up for a signal: a request sent may be kept, and is then taken back.
  let seq: number;
  try {
    seq = await bounded(store.request(kind), CALL_LIMIT_MS, 'asking');
  } catch (err) {
    if (err instanceof StoreTimeout)
      throw new Error(`${err.message}: the request may have been kept, and a server run it`);
    throw err;
  }
  const seen = await pollStore(
    async () => ((await store.requestTaken(seq)) ? true : undefined),
    'looking at the request',
    waitMs,
    interrupted,
  );
  if (seen.kind === 'found') return { kind: 'taken', seq };
  let withdrawn: boolean;
  try {
    withdrawn = await bounded(store.withdrawRequest(seq), CALL_LIMIT_MS, 'taking it back');
  } catch (err) {
    return { kind: 'left', seq, err };
  }
  // Not withdrawn: a server took it meanwhile.
  if (!withdrawn) return { kind: 'taken', seq };
  if (seen.kind === 'interrupted') return { kind: 'interrupted', asked: true };
  return seen.failed ? { kind: 'unchecked', err: seen.failed.err } : { kind: 'not-taken', waitMs };
}

/** How a poll of the store ended (pollStore). */
export type Polled<T> =
  | { kind: 'found'; value: T }
  | { kind: 'interrupted' }
  /** `failed`: the error of the last look, when none after it went through. */
  | { kind: 'timeout'; failed?: { err: unknown } };

/**
 * Look at the store every PICKUP_POLL_MS until `look` finds something (not undefined), `waitMs`
 * pass or `interrupted` settles. A look that fails or does not answer within LOOK_LIMIT_MS is
 * looked again at the next poll (a dropped connection must not cut the wait short while the
 * server is about to answer).
 */
export async function pollStore<T>(
  look: () => Promise<T | undefined>,
  what: string,
  waitMs: number,
  interrupted: Promise<typeof INTERRUPTED>,
): Promise<Polled<T>> {
  const deadline = Date.now() + waitMs;
  let failed: { err: unknown } | undefined;
  while (Date.now() < deadline) {
    try {
      const seen = await Promise.race([bounded(look(), LOOK_LIMIT_MS, what), interrupted]);
      if (seen === INTERRUPTED) return { kind: 'interrupted' };
      if (seen !== undefined) return { kind: 'found', value: seen };
      failed = undefined;
    } catch (err) {
      failed = { err };
    }
    const next = await Promise.race([sleep(PICKUP_POLL_MS), interrupted]);
    if (next === INTERRUPTED) return { kind: 'interrupted' };
  }
  return failed ? { kind: 'timeout', failed } : { kind: 'timeout' };
}

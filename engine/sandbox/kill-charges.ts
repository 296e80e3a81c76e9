/**
 * Which calls a killed transform process held are charged for the kill,
 * and what becomes of them: sent again to a fresh process, or failed once
 * charged too often. A process runs its calls in order, so the call it was
 * running when it was killed (the late one, or the oldest when it died on
 * its own) names the suspect module; only that module's calls are charged
 * against the tight bound. A crash also counts against every call present,
 * against a loose bound: what kills a process outside the call it runs
 * (while parsing its commands, say) must not kill it for ever.
 */

/**
 * Kills of its own module's calls a call may be charged for before it fails: the calls of a
 * poisoned mapping are purged in two restarts, not one deadline or crash each.
 */
export const CHARGES_PER_CALL = 2;

/**
 * Crashes a call may be present at, whoever's call was running, before it fails. Far above
 * what a poisoned mapping puts another mapping's calls through (each of its crashes charges
 * its own calls, so they are gone after two), low enough that a call which itself kills the
 * process where no call is charged is dropped after a few restarts.
 */
export const CRASHES_PER_CALL = 8;

/**
 * Why a process holding calls was killed: a call of module `key` missed its deadline, or the
 * process died on its own while running a call of module `key`.
 */
export type Kill = { cause: 'timeout' | 'crash'; key: string };

/** The kills charged to one call so far. */
export type Charges = { charged: number; crashes: number };

/** What a kill makes of one call the process held: its charges, and whether it is sent again. */
export type KillCharge = Charges & { again: boolean };

/** Charge one call held by a killed process (`key`: its module; the rest: its charges before). */
export function chargeKill(kill: Kill, call: Charges & { key: string }): KillCharge {
  const charged = call.key === kill.key ? call.charged + 1 : call.charged;
  const crashes = kill.cause === 'crash' ? call.crashes + 1 : call.crashes;
  return { charged, crashes, again: charged < CHARGES_PER_CALL && crashes < CRASHES_PER_CALL };
}

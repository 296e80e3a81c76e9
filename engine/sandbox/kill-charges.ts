/**
 * Which calls a killed transform process held are charged for the kill,
 * and what becomes of them: sent again to a fresh process, or failed once
 * charged CHARGES_PER_CALL times. Only the calls the kill may be the doing
 * of are charged: on a missed deadline, those of the late call's own
 * module (the others were waiting behind it, not running); when the process
 * died on its own, every one.
 */

/**
 * Kills a call may be charged for before it fails. A call present when its process dies on its
 * own, or is killed for a call of the same mapping, is charged: what kills a process outside
 * the call it is running (while parsing its commands) would otherwise kill it for ever, and
 * the calls of a poisoned mapping are purged in two restarts, not one deadline each.
 */
export const CHARGES_PER_CALL = 2;

/** Why a process holding calls was killed: a call of module `key` missed its deadline, or it died on its own. */
export type Kill = { cause: 'timeout'; key: string } | { cause: 'crash' };

/** What a kill makes of one call the process held: its kills charged, and whether it is sent again. */
export type KillCharge = { charged: number; again: boolean };

/** Charge one call held by a killed process (`charged`: the kills it was charged for before). */
export function chargeKill(kill: Kill, call: { key: string; charged: number }): KillCharge {
  const chargeable = kill.cause === 'crash' || call.key === kill.key;
  const charged = chargeable ? call.charged + 1 : call.charged;
  return { charged, again: charged < CHARGES_PER_CALL };
}

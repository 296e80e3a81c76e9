/**
 * The history a turn is sent: the newest turns of its owner that fit what
 * the message left of the byte budget (and at most a number of turns),
 * weighed in the store before any text is read. It starts with a prompt: a
 * reply whose prompt did not fit goes with it.
 */
import { byteLength } from '../utf8.ts';
import { fitCount } from './prompt-budget.ts';
import type { RuntimeStore, TurnOwner } from './runtime-store.ts';

/** The newest whole turns of `owner` within `maxTurns` and `budget` bytes, oldest first. */
export async function historyWithin(
  store: Pick<RuntimeStore, 'history' | 'historySizes'>,
  owner: TurnOwner,
  maxTurns: number,
  budget: number,
): Promise<Array<{ role: 'user' | 'assistant'; text: string }>> {
  const count = fitCount(await store.historySizes(owner, maxTurns), budget);
  if (count === 0) return [];
  const turns = await store.history(owner, count);
  // Weighed again as read: a turn added in between (it would push an older one in) still fits.
  const fits = fitCount(turns.map((turn) => byteLength(turn.text)).reverse(), budget);
  const kept = turns.slice(turns.length - fits);
  const start = kept[0]?.role === 'assistant' ? 1 : 0;
  return kept.slice(start).map(({ role, text }) => ({ role, text }));
}

/**
 * How much text one turn sends a runner (runtime.maxPromptBytes): the
 * message gets at most half of the budget, the history what the message
 * left, and a turn is stored no larger than a message may be, so that the
 * newest turns always have room. Sizes are UTF-8 bytes, what a runner is
 * sent. Pure.
 */

/**
 * Default of `runtime.maxPromptBytes`: 1 MiB of text, about 250,000 tokens, the order of a
 * large model's context window. A turn over it could not be read whole by the agent anyway,
 * and every byte is built, serialised and sent by hookgate (a heartbeat over a backlog of
 * 254 KB wakes sent 25-127 MB per turn and held the event loop for seconds).
 */
export const DEFAULT_MAX_PROMPT_BYTES = 1_048_576;

/** How many turns of history a heartbeat is sent at most (besides the byte budget). */
export const HEARTBEAT_HISTORY_TURNS = 20;

/**
 * The most bytes a turn's message takes (a heartbeat's events and prompt, an agent run's
 * request text), and the most a stored turn keeps: half the budget, so a backlog of events or
 * one large request never leaves the history no room, and the newest stored turn fits beside
 * any message.
 */
export function messageBudget(maxPromptBytes: number): number {
  return Math.floor(maxPromptBytes / 2);
}

/** How many of the leading items fit the budget together (none when the first does not). */
export function fitCount(sizes: readonly number[], budget: number): number {
  let total = 0;
  let count = 0;
  for (const size of sizes) {
    total += size;
    if (total > budget) break;
    count += 1;
  }
  return count;
}

/**
 * How many of the leading items a batch takes: those that fit, and at least one when there is
 * any (an item larger than the budget on its own is taken alone, for its caller to cut), so
 * what waits behind an item too large still makes progress.
 */
export function batchCount(sizes: readonly number[], budget: number): number {
  return Math.max(fitCount(sizes, budget), Math.min(sizes.length, 1));
}

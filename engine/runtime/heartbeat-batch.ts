/**
 * Which pending events a heartbeat takes: the oldest ones whose lines fit
 * its share of runtime.maxPromptBytes (and at most a batch), weighed in the
 * store before any text is read, so a backlog of large events is never
 * read whole. Those past the share stay pending: the events shown are the
 * oldest, exactly those are consumed.
 */
import { EVENT_LINE_BYTES, eventsRoom, heartbeatEvents } from './heartbeat-prompt.ts';
import { batchCount, messageBudget } from './prompt-budget.ts';
import type { RuntimeStore } from './runtime-store.ts';

/** The events a heartbeat shows, their seqs (to consume), and whether any stay pending. */
export type HeartbeatBatch = {
  events: { text: string; trusted: boolean }[];
  seqs: number[];
  more: boolean;
};

/** The next heartbeat's events of `sessionKey` (as the prompt shows them, oldest first). */
export async function nextBatch(
  store: Pick<RuntimeStore, 'pendingSizes' | 'pendingEvents'>,
  settings: { mainKey: string; prompt: string; maxEvents: number; maxPromptBytes: number },
): Promise<HeartbeatBatch> {
  const room = eventsRoom(messageBudget(settings.maxPromptBytes), settings.prompt);
  // One more than a batch: whether events stay pending after this heartbeat.
  const sizes = await store.pendingSizes(settings.mainKey, settings.maxEvents + 1);
  const lines = sizes.map(({ bytes }) => bytes + EVENT_LINE_BYTES);
  const count = Math.min(settings.maxEvents, batchCount(lines, room));
  const read = count > 0 ? await store.pendingEvents(settings.mainKey, count) : [];
  // Weighed again as shown: a row wrapped afresh as it is read may be larger than stored.
  const events = heartbeatEvents(read, room);
  return {
    events,
    seqs: read.slice(0, events.length).map((event) => event.seq),
    more: sizes.length > read.length || read.length > events.length,
  };
}

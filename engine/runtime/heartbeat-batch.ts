/**
 * Which pending events a heartbeat takes: the oldest ones whose lines fit
 * its share of runtime.maxPromptBytes (and at most a batch), weighed in the
 * store before any text is read, so a backlog of large events is never
 * read whole. Those past the share stay pending: the events shown are the
 * oldest, exactly those are consumed. While a refused event is isolated,
 * the plan narrows the batch, holds suspects out, or takes one alone.
 */
import type { IsolationPlan } from './event-isolation.ts';
import { EVENT_LINE_BYTES, eventsRoom, heartbeatEvents } from './heartbeat-prompt.ts';
import { batchCount, messageBudget } from './prompt-budget.ts';
import type { RuntimeStore } from './runtime-store.ts';

/** The events a heartbeat shows, their seqs (to consume), and whether any stay pending. */
export type HeartbeatBatch = {
  events: { text: string; trusted: boolean }[];
  seqs: number[];
  more: boolean;
};

const FULL: IsolationPlan = { kind: 'batch', exclude: new Set() };

/** The next heartbeat's events of `sessionKey` (as the prompt shows them, oldest first). */
export async function nextBatch(
  store: Pick<RuntimeStore, 'pendingSizes' | 'pendingEvents'>,
  settings: { mainKey: string; prompt: string; maxEvents: number; maxPromptBytes: number },
  plan: IsolationPlan = FULL,
): Promise<HeartbeatBatch> {
  const room = eventsRoom(messageBudget(settings.maxPromptBytes), settings.prompt);
  // Suspects are among the oldest pending events (each was the oldest not held out when it was
  // refused alone), so reading past them is reading as many more.
  const held = plan.kind === 'alone' ? new Set<number>() : plan.exclude;
  const limit =
    plan.kind === 'alone' ? 1 : Math.min(settings.maxEvents, plan.limit ?? settings.maxEvents);
  const keep =
    plan.kind === 'alone' ? (seq: number) => seq === plan.seq : (seq: number) => !held.has(seq);
  const scan = plan.kind === 'alone' ? settings.maxEvents : limit + held.size;
  // One more than a batch: whether events stay pending after this heartbeat.
  const sizes = await store.pendingSizes(settings.mainKey, scan + 1);
  const kept = sizes.filter(({ seq }) => keep(seq));
  const lines = kept.map(({ bytes }) => bytes + EVENT_LINE_BYTES);
  const count = Math.min(limit, batchCount(lines, room));
  const lastKept = kept[count - 1];
  const through = lastKept ? sizes.indexOf(lastKept) + 1 : 0;
  const read =
    through > 0
      ? (await store.pendingEvents(settings.mainKey, through))
          .filter((event) => keep(event.seq))
          .slice(0, count)
      : [];
  // Weighed again as shown: a row wrapped afresh as it is read may be larger than stored.
  const events = heartbeatEvents(read, room);
  return {
    events,
    seqs: read.slice(0, events.length).map((event) => event.seq),
    more:
      plan.kind === 'alone'
        ? sizes.some(({ seq }) => !keep(seq))
        : kept.length > read.length || read.length > events.length,
  };
}

/**
 * A non-durable in-memory ActionStore for one diagnostic benchmark row:
 * hookgate's pipeline with the SQLite commit taken out, to show what the
 * durable acceptance costs. Never used by the service. Its appends are
 * answered together once per event-loop turn, as the SQLite store's group
 * commit answers them: answered one by one, each answer's socket write woke
 * the sleeping load generator (an interrupt that costs the server about 5 µs of
 * kernel time per answer in a VM), which a group's answers, written back to
 * back, share, so the row overstated the request path's cost.
 */
import type {
  AcceptedRecord,
  ActionStore,
  AppendOutcome,
  IdempotencyRecord,
  StoredAction,
} from '../engine/queue/action-store.ts';

/** A store that keeps a count of appends and answers those of one event-loop turn together. */
export function createMemoryStore(): ActionStore & { appended(): number } {
  let count = 0;
  const keys = new Map<string, IdempotencyRecord>();
  let waiting: Array<() => void> = [];
  const answerAll = () => {
    const group = waiting;
    waiting = [];
    for (const answer of group) answer();
  };
  function outcomeOf(record: AcceptedRecord): AppendOutcome {
    for (const key of record.idempotency ?? []) {
      const previous = keys.get(key.key);
      if (previous && previous.createdAtMs >= key.notBeforeMs) return { stored: false, previous };
    }
    count++;
    for (const key of record.idempotency ?? []) keys.set(key.key, key);
    return { stored: true };
  }
  return {
    appendOrGet(record: AcceptedRecord) {
      const outcome = outcomeOf(record);
      // The SQLite store with commitDelayMs 0 commits its group in the loop's check phase too.
      if (waiting.length === 0) setImmediate(answerAll);
      return new Promise<AppendOutcome>((resolve) => waiting.push(() => resolve(outcome)));
    },
    async findIdempotency(key: string, notBeforeMs: number) {
      const found = keys.get(key);
      return found && found.createdAtMs >= notBeforeMs ? found : undefined;
    },
    async pruneIdempotency() {
      return 0;
    },
    async listActions(): Promise<StoredAction[]> {
      return [];
    },
    async close() {},
    appended: () => count,
  };
}

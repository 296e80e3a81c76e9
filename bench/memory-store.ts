/**
 * A non-durable in-memory ActionStore for one diagnostic benchmark row:
 * hookgate's pipeline with the SQLite commit taken out, to show what the
 * durable acceptance costs. Never used by the service.
 */
import type {
  AcceptedRecord,
  ActionStore,
  IdempotencyRecord,
  StoredAction,
} from '../engine/queue/action-store.ts';

/** A store that keeps a count of appends and resolves each on the next microtask. */
export function createMemoryStore(): ActionStore & { appended(): number } {
  let count = 0;
  const keys = new Map<string, IdempotencyRecord>();
  return {
    async appendOrGet(record: AcceptedRecord) {
      for (const key of record.idempotency ?? []) {
        const previous = keys.get(key.key);
        if (previous && previous.createdAtMs >= key.notBeforeMs) return { stored: false, previous };
      }
      count++;
      for (const key of record.idempotency ?? []) keys.set(key.key, key);
      return { stored: true };
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

/**
 * The idempotency key table's reads, shared by the group writer (its
 * atomic check before an insert) and the readers (the fast first look).
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { IdempotencyRecord } from '../../queue/action-store.ts';

/** A key's live record: created at or after the given time. */
export function prepareKeyLookup(db: DatabaseSync): StatementSync {
  return db.prepare(
    'SELECT key, fingerprint, action_id, response, created_at_ms FROM idempotency_keys WHERE key = ? AND created_at_ms >= ?',
  );
}

/** The record of a key, when the lookup found one. */
export function findKey(
  lookup: StatementSync,
  key: string,
  notBeforeMs: number,
): IdempotencyRecord | undefined {
  const row = lookup.get(key, notBeforeMs) as Record<string, string | number> | undefined;
  if (!row) return undefined;
  return {
    key: row['key'] as string,
    fingerprint: row['fingerprint'] as string,
    actionId: row['action_id'] as string,
    response: row['response'] as string,
    createdAtMs: Number(row['created_at_ms']),
  };
}

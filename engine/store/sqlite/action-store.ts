/**
 * The embedded action store on node:sqlite (WAL, synchronous=FULL). Appends
 * are committed in groups (group-writer.ts): every append of an event-loop
 * turn joins one transaction, so durability costs one fsync per group. Each
 * append resolves only after its COMMIT returned. The group is written on
 * the event loop: measured against a writer thread, the thread's hand-off
 * cost more CPU per request than the COMMIT's wait on the loop (README,
 * Performance), and the runtime's writes on this thread never wait for a
 * lock another thread holds. Reads use a connection of their own.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type {
  AcceptedRecord,
  ActionState,
  ActionStore,
  AppendOutcome,
  IdempotencyRecord,
  KeepKeys,
  StoredAction,
} from '../../queue/action-store.ts';
import { prepareDataDir } from './data-dir.ts';
import { parseStoredAction, storedActionJson } from '../stored-action.ts';
import { type WakeAction, wakeEvent } from '../../runtime/stored-runs.ts';
import {
  type GroupWriter,
  openGroupWriter,
  type WakeEvent,
  type WriteItem,
  type WriteResult,
} from './group-writer.ts';
import { findKey, prepareKeyLookup } from './key-records.ts';
import { openDatabase } from './schema.ts';
import { boundLimit } from './bound-limit.ts';
import { isoNow } from '../../iso-time.ts';

export { STORE_FILE } from './schema.ts';

export type SqliteStoreOptions = {
  /** Wait this long for more appends before committing them; 0 = next event-loop turn. */
  commitDelayMs?: number;
  /** Told about a data directory open to other users (it is left as it is). */
  onWarning?: (message: string) => void;
};

/** An append waiting for its group's COMMIT. */
type Pending = {
  item: WriteItem;
  resolve: (outcome: AppendOutcome) => void;
  reject: (err: unknown) => void;
};

/** Open (or create and migrate) the store in a data directory. */
export async function openSqliteStore(
  dataDir: string,
  options: SqliteStoreOptions = {},
): Promise<SqliteActionStore> {
  const warning = prepareDataDir(dataDir);
  if (warning) options.onWarning?.(warning);
  const writer = openGroupWriter(dataDir);
  return new SqliteActionStore(
    writer,
    openDatabase(dataDir, { create: false }),
    options.commitDelayMs ?? 0,
  );
}

/** Read accepted actions, newest first, without starting a writer (for the `actions` command). */
export function readActions(dataDir: string, limit: number): StoredAction[] {
  const db = openDatabase(dataDir, { create: false, readOnly: true });
  try {
    return listFrom(db.prepare(SELECT_ACTIONS), limit);
  } finally {
    db.close();
  }
}

const SELECT_ACTIONS = `SELECT seq, state, attempts, action FROM actions ORDER BY seq DESC ${boundLimit()}`;

function listFrom(statement: StatementSync, limit: number): StoredAction[] {
  const rows = statement.all(limit) as Array<Record<string, string | number>>;
  return rows.map((row) => ({
    seq: Number(row['seq']),
    state: row['state'] as ActionState,
    attempts: Number(row['attempts']),
    action: parseStoredAction(row['action'] as string),
  }));
}

function toItem({ actions, idempotency }: AcceptedRecord, wakeSession: string | null): WriteItem {
  return {
    rows: actions.map((action) => ({
      id: action.id,
      kind: action.kind,
      hook: action.hook,
      sessionKey: action.kind === 'agent' ? action.sessionKey : null,
      receivedAt: action.receivedAt,
      json: storedActionJson(action),
      ...(action.kind === 'wake' &&
        wakeSession !== null && { event: appliedWake(action, wakeSession) }),
    })),
    ...(idempotency && idempotency.length > 0 && { keys: idempotency }),
  };
}

function appliedWake(wake: WakeAction, mainKey: string): WakeEvent {
  const { sessionKey, text, trusted } = wakeEvent(wake, mainKey);
  return { sessionKey, text, trusted, at: isoNow() };
}

/** The SQLite action store. */
export class SqliteActionStore implements ActionStore {
  private readonly writer: GroupWriter;
  private readonly reader: DatabaseSync;
  private readonly delayMs: number;
  private readonly selectKey: StatementSync;
  private readonly selectActions: StatementSync;
  private outbox: Pending[] = [];
  private scheduled = false;
  private closing: Promise<void> | undefined;
  private wakeSession: string | null = null;

  constructor(writer: GroupWriter, reader: DatabaseSync, delayMs: number) {
    this.writer = writer;
    this.reader = reader;
    this.delayMs = delayMs;
    this.selectKey = prepareKeyLookup(reader);
    this.selectActions = reader.prepare(SELECT_ACTIONS);
  }

  /**
   * From now on, a wake is applied as it is stored: its event goes into this session in the
   * same transaction and the action is stored done, so the runtime has nothing left to do for
   * it. null: wakes stay queued for the runtime's worker.
   */
  applyWakesOnAccept(sessionKey: string | null): void {
    this.wakeSession = sessionKey;
  }

  appendOrGet(record: AcceptedRecord): Promise<AppendOutcome> {
    if (this.closing) return Promise.reject(new Error('store is closed'));
    const item = toItem(record, this.wakeSession);
    if (!this.scheduled) {
      this.scheduled = true;
      // One group per event-loop turn carries every append of that turn.
      if (this.delayMs > 0) setTimeout(() => this.flush(), this.delayMs);
      else setImmediate(() => this.flush());
    }
    return new Promise<AppendOutcome>((resolve, reject) => {
      this.outbox.push({ item, resolve, reject });
    });
  }

  async findIdempotency(key: string, notBeforeMs: number): Promise<IdempotencyRecord | undefined> {
    return findKey(this.selectKey, key, notBeforeMs);
  }

  async pruneIdempotency(beforeMs: number, keep?: KeepKeys): Promise<number> {
    this.flush();
    return this.writer.prune(beforeMs, keep);
  }

  async listActions({ limit }: { limit: number }): Promise<StoredAction[]> {
    return listFrom(this.selectActions, limit);
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.flush();
    this.writer.close();
    this.reader.close();
  }

  private flush(): void {
    this.scheduled = false;
    if (this.outbox.length === 0) return;
    const group = this.outbox;
    this.outbox = [];
    let results: WriteResult[];
    try {
      results = this.writer.commit(group.map((pending) => pending.item));
    } catch (err) {
      // Even the rollback failed (a closed or broken connection): none of the group is answered 200.
      results = group.map(() => ({ error: err as Error }));
    }
    // Each append's outcome, once its group's COMMIT returned.
    group.forEach(({ resolve, reject }, at) => {
      const { error, previous } = results[at] ?? { error: new Error('no result for the append') };
      if (error) reject(error);
      else resolve(previous ? { stored: false, previous } : { stored: true });
    });
  }
}

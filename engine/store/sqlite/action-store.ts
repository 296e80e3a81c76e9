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
import type { Action } from '../../../schemas/action.ts';
import type {
  AcceptedRecord,
  ActionState,
  ActionStore,
  AppendOutcome,
  IdempotencyRecord,
  StoredAction,
} from '../../queue/action-store.ts';
import { prepareDataDir } from './data-dir.ts';
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

export { STORE_FILE } from './schema.ts';

export type SqliteStoreOptions = {
  /** Wait this long for more appends before committing them; 0 = next event-loop turn. */
  commitDelayMs?: number;
  /** Told about a data directory open to other users (it is left as it is). */
  onWarning?: (message: string) => void;
};

type Waiter = { resolve: (value: never) => void; reject: (err: unknown) => void };

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

const SELECT_ACTIONS = 'SELECT seq, state, attempts, action FROM actions ORDER BY seq DESC LIMIT ?';

function listFrom(statement: StatementSync, limit: number): StoredAction[] {
  const rows = statement.all(limit) as Array<Record<string, string | number>>;
  return rows.map((row) => ({
    seq: Number(row['seq']),
    state: row['state'] as ActionState,
    attempts: Number(row['attempts']),
    action: JSON.parse(row['action'] as string) as Action,
  }));
}

function toItem(
  ticket: number,
  { actions, idempotency }: AcceptedRecord,
  wakeSession: string | null,
): WriteItem {
  const at = wakeSession === null ? '' : new Date().toISOString();
  return {
    ticket,
    rows: actions.map((action) => ({
      id: action.id,
      kind: action.kind,
      hook: action.hook,
      sessionKey: action.kind === 'agent' ? action.sessionKey : null,
      receivedAt: action.receivedAt,
      json: JSON.stringify(action),
      ...(action.kind === 'wake' &&
        wakeSession !== null && { event: appliedWake(action, wakeSession, at) }),
    })),
    ...(idempotency && idempotency.length > 0 && { keys: idempotency }),
  };
}

function appliedWake(wake: WakeAction, mainKey: string, at: string): WakeEvent {
  const { sessionKey, text, trusted } = wakeEvent(wake, mainKey);
  return { sessionKey, text, trusted, at };
}

/** The SQLite action store. */
export class SqliteActionStore implements ActionStore {
  private readonly writer: GroupWriter;
  private readonly reader: DatabaseSync;
  private readonly delayMs: number;
  private readonly selectKey: StatementSync;
  private readonly selectActions: StatementSync;
  private readonly waiting = new Map<number, Waiter>();
  private outbox: WriteItem[] = [];
  private scheduled = false;
  private nextTicket = 1;
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
    const ticket = this.nextTicket++;
    this.outbox.push(toItem(ticket, record, this.wakeSession));
    if (!this.scheduled) {
      this.scheduled = true;
      // One group per event-loop turn carries every append of that turn.
      if (this.delayMs > 0) setTimeout(() => this.flush(), this.delayMs);
      else setImmediate(() => this.flush());
    }
    return this.wait<AppendOutcome>(ticket);
  }

  async findIdempotency(key: string, notBeforeMs: number): Promise<IdempotencyRecord | undefined> {
    return findKey(this.selectKey, key, notBeforeMs);
  }

  async pruneIdempotency(beforeMs: number): Promise<number> {
    this.flush();
    return this.writer.prune(beforeMs);
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

  private wait<T>(ticket: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(ticket, { resolve: resolve as (value: never) => void, reject });
    });
  }

  private flush(): void {
    this.scheduled = false;
    if (this.outbox.length === 0) return;
    const items = this.outbox;
    this.outbox = [];
    let results: WriteResult[];
    try {
      results = this.writer.commit(items);
    } catch (err) {
      // Even the rollback failed (a closed or broken connection): none of the group is answered 200.
      results = items.map(({ ticket }) => ({ ticket, error: (err as Error).message }));
    }
    this.settle(results);
  }

  /** Each append's outcome, once its group's COMMIT returned. */
  private settle(results: readonly WriteResult[]): void {
    for (const { ticket, error, previous } of results) {
      const waiter = this.waiting.get(ticket);
      this.waiting.delete(ticket);
      if (error !== undefined) waiter?.reject(new Error(error));
      else waiter?.resolve((previous ? { stored: false, previous } : { stored: true }) as never);
    }
  }
}

/**
 * The embedded action store on node:sqlite (WAL, synchronous=FULL). Writes
 * go to a writer thread (writer.ts) that commits them in groups, so
 * durability costs one fsync per batch and the fsync never stalls request
 * parsing. Each append resolves only after its COMMIT returned. Reads use a
 * connection of their own on this thread (WAL readers do not wait for the writer).
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
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
import { findKey, prepareKeyLookup } from './key-records.ts';
import { openDatabase } from './schema.ts';
import type { FromWriter, ToWriter, WriteItem } from './writer.ts';

export { STORE_FILE } from './schema.ts';

export type SqliteStoreOptions = {
  /** Wait this long for more appends before handing them to the writer; 0 = next event-loop turn. */
  commitDelayMs?: number;
  /** Told about a data directory open to other users (it is left as it is). */
  onWarning?: (message: string) => void;
};

type Waiter = { resolve: (value: never) => void; reject: (err: unknown) => void };

/** Open (or create) the store in a data directory; resolves once the writer is ready. */
export async function openSqliteStore(
  dataDir: string,
  options: SqliteStoreOptions = {},
): Promise<ActionStore> {
  const warning = prepareDataDir(dataDir);
  if (warning) options.onWarning?.(warning);
  const worker = new Worker(new URL('./writer.ts', import.meta.url), {
    workerData: { dataDir },
  });
  await new Promise<void>((resolve, reject) => {
    const onMessage = (message: FromWriter) => {
      if (message.type !== 'ready') return;
      worker.off('error', reject);
      worker.off('message', onMessage);
      resolve();
    };
    worker.on('message', onMessage);
    worker.once('error', reject);
  });
  return new SqliteActionStore(
    worker,
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

function toItem(ticket: number, { actions, idempotency }: AcceptedRecord): WriteItem {
  return {
    ticket,
    rows: actions.map((action) => ({
      id: action.id,
      kind: action.kind,
      hook: action.hook,
      sessionKey: action.kind === 'agent' ? action.sessionKey : null,
      receivedAt: action.receivedAt,
      json: JSON.stringify(action),
    })),
    ...(idempotency && idempotency.length > 0 && { keys: idempotency }),
  };
}

class SqliteActionStore implements ActionStore {
  private readonly worker: Worker;
  private readonly reader: DatabaseSync;
  private readonly delayMs: number;
  private readonly selectKey: StatementSync;
  private readonly selectActions: StatementSync;
  private readonly waiting = new Map<number, Waiter>();
  private outbox: WriteItem[] = [];
  private scheduled = false;
  private nextTicket = 1;
  private failure: Error | undefined;
  private closing: Promise<void> | undefined;

  constructor(worker: Worker, reader: DatabaseSync, delayMs: number) {
    this.worker = worker;
    this.reader = reader;
    this.delayMs = delayMs;
    this.selectKey = prepareKeyLookup(reader);
    this.selectActions = reader.prepare(SELECT_ACTIONS);
    worker.on('message', (message: FromWriter) => this.onMessage(message));
    worker.on('error', (err) => this.fail(err));
    worker.on('exit', () => this.fail(new Error('the store writer stopped')));
  }

  appendOrGet(record: AcceptedRecord): Promise<AppendOutcome> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closing) return Promise.reject(new Error('store is closed'));
    const ticket = this.nextTicket++;
    this.outbox.push(toItem(ticket, record));
    if (!this.scheduled) {
      this.scheduled = true;
      // One message per event-loop turn carries every append of that turn.
      if (this.delayMs > 0) setTimeout(() => this.post(), this.delayMs);
      else setImmediate(() => this.post());
    }
    return this.wait<AppendOutcome>(ticket);
  }

  async findIdempotency(key: string, notBeforeMs: number): Promise<IdempotencyRecord | undefined> {
    return findKey(this.selectKey, key, notBeforeMs);
  }

  pruneIdempotency(beforeMs: number): Promise<number> {
    if (this.failure) return Promise.reject(this.failure);
    const ticket = this.nextTicket++;
    this.send({ type: 'prune', ticket, beforeMs });
    return this.wait<number>(ticket);
  }

  async listActions({ limit }: { limit: number }): Promise<StoredAction[]> {
    return listFrom(this.selectActions, limit);
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.post();
    if (!this.failure) {
      const closed = new Promise<void>((resolve) => {
        this.worker.on('message', (message: FromWriter) => message.type === 'closed' && resolve());
        this.worker.once('exit', () => resolve());
      });
      this.send({ type: 'close' });
      await closed;
    }
    this.reader.close();
    await this.worker.terminate();
  }

  private wait<T>(ticket: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(ticket, { resolve: resolve as (value: never) => void, reject });
    });
  }

  private post(): void {
    this.scheduled = false;
    if (this.outbox.length === 0) return;
    const items = this.outbox;
    this.outbox = [];
    this.send({ type: 'append', items });
  }

  private send(message: ToWriter): void {
    this.worker.postMessage(message);
  }

  private onMessage(message: FromWriter): void {
    if (message.type === 'committed') {
      for (const { ticket, error, previous } of message.results) {
        const waiter = this.waiting.get(ticket);
        this.waiting.delete(ticket);
        const outcome: AppendOutcome = previous ? { stored: false, previous } : { stored: true };
        if (error === undefined) waiter?.resolve(outcome as never);
        else waiter?.reject(new Error(error));
      }
    } else if (message.type === 'pruned') {
      this.waiting.get(message.ticket)?.resolve(message.count as never);
      this.waiting.delete(message.ticket);
    }
  }

  /** The writer is gone: nothing pending was committed, and nothing new can be. */
  private fail(err: Error): void {
    if (this.closing && !this.failure && this.waiting.size === 0) return;
    this.failure ??= err;
    for (const waiter of this.waiting.values()) waiter.reject(err);
    this.waiting.clear();
  }
}

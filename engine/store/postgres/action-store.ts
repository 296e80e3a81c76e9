/**
 * The shared action store on PostgreSQL: several instances accept into one
 * queue. All appends of one event-loop turn go in as ONE multi-row statement
 * (the keys checked and inserted, then the actions of the requests that won
 * all their keys), at most two such batches in flight, each caller answered
 * only after its batch's COMMIT. The key check is the database's unique
 * index, so it holds across instances, not only within this one.
 */
import pg from 'pg';
import type { Action } from '../../../schemas/action.ts';
import {
  type AcceptedRecord,
  AppendInDoubt,
  type ActionState,
  type ActionStore,
  type AppendOutcome,
  type IdempotencyRecord,
  type KeepKeys,
  type NewIdempotencyRecord,
  type StoredAction,
} from '../../queue/action-store.ts';
import {
  CommitInDoubt,
  closePool,
  inTransaction,
  openPool,
  type PostgresSettings,
} from './pool.ts';
import { migratePostgres } from './schema.ts';
import { storableText } from './session-records.ts';
import { parseStoredAction } from '../stored-action.ts';

// Two batches in flight: one committing (waiting for its WAL flush) while the next one fills.
const MAX_IN_FLIGHT = 2;
// One statement's bounds: while the database is slow, requests pile up (as many as the listener
// lets in), and one statement carrying them all could reach PostgreSQL's 1 GB message limit and
// fail every one of them. The rest wait for the next batch.
const MAX_BATCH_REQUESTS = 500;
const MAX_BATCH_BYTES = 8 * 1024 * 1024;
// A request sent back to the queue (it lost a race it could not see, or the batch deadlocked)
// is tried this often before it is refused.
const MAX_ATTEMPTS = 5;
// Rows one prune statement deletes: short transactions, no long lock on the keys.
const PRUNE_BATCH = 1000;

/**
 * One statement for a batch. Keys are unique across the batch (the client sends only the first
 * request naming a key). `held`: requests with a key live before this statement (they get the
 * first such record back). `won`: keys inserted, or expired ones replaced. `missing`: requests
 * that lost a key to another instance's insert this statement could not see. Actions go in
 * only for requests that won every key. A request that won some keys and lost others reports
 * 'partial' and the caller rolls the whole batch back, so nothing of it is kept.
 */
const ACCEPT = `
WITH keys AS (
  SELECT * FROM unnest($1::int[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[],
                       $7::bigint[], $8::bigint[])
    AS t(ord, pos, key, fingerprint, action_id, response, created_at_ms, not_before_ms)
),
held AS (
  SELECT DISTINCT ON (keys.ord) keys.ord, k.key, k.fingerprint, k.action_id, k.response,
         k.created_at_ms
  FROM keys JOIN idempotency_keys k ON k.key = keys.key AND k.created_at_ms >= keys.not_before_ms
  ORDER BY keys.ord, keys.pos
),
won AS (
  INSERT INTO idempotency_keys AS k (key, fingerprint, action_id, response, created_at_ms)
  SELECT key, fingerprint, action_id, response, created_at_ms FROM keys
  WHERE ord NOT IN (SELECT ord FROM held)
  -- One order for every instance: concurrent batches wait on each other's keys, never deadlock.
  ORDER BY key
  ON CONFLICT (key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,
    action_id = EXCLUDED.action_id, response = EXCLUDED.response,
    created_at_ms = EXCLUDED.created_at_ms
  WHERE k.created_at_ms < (SELECT keys.not_before_ms FROM keys WHERE keys.key = EXCLUDED.key)
  RETURNING key
),
missing AS (
  SELECT DISTINCT ord FROM keys
  WHERE ord NOT IN (SELECT ord FROM held) AND key NOT IN (SELECT key FROM won)
),
stored AS (
  INSERT INTO actions (id, kind, hook, session_key, received_at, action)
  SELECT id, kind, hook, session_key, received_at::timestamptz, action
  FROM unnest($9::int[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[],
              $15::text[]) WITH ORDINALITY
    AS a(ord, id, kind, hook, session_key, received_at, action, n)
  WHERE ord NOT IN (SELECT ord FROM held) AND ord NOT IN (SELECT ord FROM missing)
  -- Arrival order is store order (seq), which is each session's order.
  ORDER BY n
  RETURNING 1
)
SELECT r.ord,
  CASE WHEN h.ord IS NOT NULL THEN 'held'
       WHEN r.ord NOT IN (SELECT ord FROM missing) THEN 'stored'
       WHEN EXISTS (SELECT 1 FROM keys WHERE keys.ord = r.ord AND keys.key IN (SELECT key FROM won))
         THEN 'partial'
       ELSE 'lost' END AS outcome,
  h.key, h.fingerprint, h.action_id, h.response, h.created_at_ms,
  pg_current_xact_id()::text AS xid
FROM unnest($16::int[]) AS r(ord) LEFT JOIN held h ON h.ord = r.ord
`;

type AcceptRow = {
  ord: number;
  outcome: 'stored' | 'held' | 'lost' | 'partial';
  key: string | null;
  fingerprint: string | null;
  action_id: string | null;
  response: string | null;
  created_at_ms: string | null;
  /** The statement's transaction: asked about when its COMMIT goes unconfirmed. */
  xid: string;
};

/** A request waiting for its batch. */
type Pending = {
  actions: readonly Action[];
  /** The actions as stored, serialised once (a batch that runs again reuses them). */
  json: readonly string[];
  /** What the request adds to a statement, roughly: its actions' JSON and its keys' answers. */
  bytes: number;
  /** Its keys, each once. */
  keys: readonly NewIdempotencyRecord[];
  attempts: number;
  resolve: (outcome: AppendOutcome) => void;
  reject: (err: unknown) => void;
};

/**
 * A key as PostgreSQL stores it: UTF-8 cannot carry a lone surrogate (the driver sends U+FFFD)
 * and a text column cannot hold NUL (U+FFFD too). Keys are looked up, compared and grouped in
 * this form: a key with NUL is stored rather than refused, and two keys the table would hold as
 * one are one key in a batch too (two rows for one key would fail the whole statement, every
 * other request of the batch with it).
 */
function storedKey(key: string): string {
  return storableText(key.toWellFormed());
}

function uniqueKeys(keys: readonly NewIdempotencyRecord[] = []): NewIdempotencyRecord[] {
  const seen = new Set<string>();
  return keys
    .map((record) => ({ ...record, key: storedKey(record.key) }))
    .filter(({ key }) => !seen.has(key) && seen.add(key));
}

function recordOf({ notBeforeMs: _window, ...record }: NewIdempotencyRecord): IdempotencyRecord {
  return record;
}

function acceptParams(batch: readonly Pending[]): unknown[] {
  const k = { ord: [] as number[], pos: [] as number[], key: [] as string[], fp: [] as string[] };
  const kv = { id: [] as string[], resp: [] as string[], at: [] as number[], nb: [] as number[] };
  const a = {
    ord: [] as number[],
    id: [] as string[],
    kind: [] as string[],
    hook: [] as string[],
    session: [] as Array<string | null>,
    received: [] as string[],
    json: [] as string[],
  };
  batch.forEach((request, ord) => {
    request.keys.forEach((record, pos) => {
      k.ord.push(ord);
      k.pos.push(pos);
      k.key.push(record.key);
      k.fp.push(record.fingerprint);
      kv.id.push(record.actionId);
      kv.resp.push(record.response);
      kv.at.push(record.createdAtMs);
      kv.nb.push(record.notBeforeMs);
    });
    request.actions.forEach((action, i) => {
      a.ord.push(ord);
      a.id.push(action.id);
      a.kind.push(action.kind);
      a.hook.push(action.hook);
      a.session.push(action.kind === 'agent' ? action.sessionKey : null);
      a.received.push(action.receivedAt);
      a.json.push(request.json[i] as string);
    });
  });
  return [
    k.ord,
    k.pos,
    k.key,
    k.fp,
    kv.id,
    kv.resp,
    kv.at,
    kv.nb,
    a.ord,
    a.id,
    a.kind,
    a.hook,
    a.session,
    a.received,
    a.json,
    batch.map((_, ord) => ord),
  ];
}

/**
 * SQLSTATE classes of a request's own data (21: two rows for one key, 22: a bad value, 23: a
 * duplicate id).
 */
function isRequestError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return (
    typeof code === 'string' &&
    (code.startsWith('21') || code.startsWith('22') || code.startsWith('23'))
  );
}

/**
 * How long an accept waits for a key another transaction holds: an instance cut off mid-accept
 * (its connection not closed) holds its keys until the server ends its transaction, and every
 * request of a batch that meets one would wait with it, then fail together.
 */
const KEY_LOCK_TIMEOUT = '2s';
// A key the prune keeps: $2 its prefix, $3 since when (a prefix of '' with $3 = $1 keeps nothing).
const KEPT = 'left(key, length($2)) = $2 AND created_at_ms >= $3';
/**
 * A keyed request tried alone after its batch met a held key: a key another instance is
 * committing is free within milliseconds, one a cut-off instance holds is not, and a batch of
 * retried keys must not hold a connection two seconds each.
 */
const SOLO_LOCK_TIMEOUT = '250ms';
/**
 * Keyed requests tried alone at once: the pool (10 connections by default) also serves the
 * runtime's claims and lease renewals, which must not wait behind a batch of held keys.
 */
const SOLO_AT_ONCE = 3;
/**
 * The longest an accept's transaction may take on this side: a database that stops answering
 * (a hung host, a partition dropping packets) ends no statement itself, and the requests of the
 * batch would wait without an answer. Lock waits end in 2 s, a batch's statement in well under.
 */
const ACCEPT_TIMEOUT_MS = 10_000;
// A database that is slow but answers ends the statement itself, a little before this side
// gives up on it: no transaction is left running, holding the batch's keys, once the 503 went.
const beginAccept = (lockTimeout: string) =>
  `BEGIN; SET LOCAL lock_timeout = '${lockTimeout}'; SET LOCAL statement_timeout = '${ACCEPT_TIMEOUT_MS - 1000}ms'`;
// How long an unconfirmed COMMIT's fate is asked after (the pauses between looks), and the
// longest one look may take (the database unreachable: a look would wait for a connection).
const IN_DOUBT_LOOKS_MS = [0, 250, 500, 1000];
const IN_DOUBT_LOOK_TIMEOUT_MS = 750;

/** A key's lock not given within KEY_LOCK_TIMEOUT (SQLSTATE 55P03): nothing was stored. */
function isLockTimeout(err: unknown): boolean {
  return (err as { code?: unknown }).code === '55P03';
}

/** Deadlock or serialisation failure: nothing was stored, the same batch may simply run again. */
function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === '40P01' || code === '40001';
}

/** The batch rolled back because a request won only some of its keys. */
class PartialBatch extends Error {}

class PostgresActionStore implements ActionStore {
  private readonly pool: pg.Pool;
  private readonly ownsPool: boolean;
  private pending: Pending[] = [];
  private scheduled = false;
  private inFlight = 0;
  private idle: Array<() => void> = [];
  private closing: Promise<void> | undefined;

  constructor(pool: pg.Pool, ownsPool: boolean) {
    this.pool = pool;
    this.ownsPool = ownsPool;
  }

  appendOrGet(record: AcceptedRecord): Promise<AppendOutcome> {
    if (this.closing) return Promise.reject(new Error('store is closed'));
    const json = record.actions.map((action) => JSON.stringify(action));
    const keys = uniqueKeys(record.idempotency);
    const bytes =
      json.reduce((sum, text) => sum + text.length, 0) +
      keys.reduce((sum, key) => sum + key.response.length + key.key.length, 0);
    return new Promise<AppendOutcome>((resolve, reject) => {
      this.pending.push({
        actions: record.actions,
        json,
        bytes,
        keys,
        attempts: 0,
        resolve,
        reject,
      });
      this.schedule();
    });
  }

  async findIdempotency(key: string, notBeforeMs: number): Promise<IdempotencyRecord | undefined> {
    // Bounded on this side as an accept is (pg reads query_timeout, its types omit it): a
    // database that stops answering without closing the connection (a frozen host) held a
    // keyed request without an answer for as long.
    const lookup: pg.QueryConfig & { query_timeout: number } = {
      text: 'SELECT key, fingerprint, action_id, response, created_at_ms FROM idempotency_keys WHERE key = $1 AND created_at_ms >= $2',
      values: [storedKey(key), notBeforeMs],
      query_timeout: ACCEPT_TIMEOUT_MS,
    };
    const { rows } = await this.pool.query<{
      key: string;
      fingerprint: string;
      action_id: string;
      response: string;
      created_at_ms: string;
    }>(lookup);
    const row = rows[0];
    if (!row) return undefined;
    return {
      key: row.key,
      fingerprint: row.fingerprint,
      actionId: row.action_id,
      response: row.response,
      createdAtMs: Number(row.created_at_ms),
    };
  }

  async pruneIdempotency(beforeMs: number, keep?: KeepKeys): Promise<number> {
    let total = 0;
    for (;;) {
      // The outer condition is checked again on a row a concurrent accept just replaced, so a
      // fresh record is never deleted for its expired predecessor.
      const { rowCount } = await this.pool.query(
        `DELETE FROM idempotency_keys WHERE created_at_ms < $1 AND NOT (${KEPT}) AND key IN (
           SELECT key FROM idempotency_keys WHERE created_at_ms < $1 AND NOT (${KEPT}) LIMIT ${PRUNE_BATCH})`,
        [beforeMs, keep?.prefix ?? '', keep?.sinceMs ?? beforeMs],
      );
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < PRUNE_BATCH) return total;
    }
  }

  async listActions({ limit }: { limit: number }): Promise<StoredAction[]> {
    const { rows } = await this.pool.query<{
      seq: string;
      state: ActionState;
      attempts: number;
      action: string;
    }>('SELECT seq, state, attempts, action FROM actions ORDER BY seq DESC LIMIT $1', [limit]);
    return rows.map((row) => ({
      seq: Number(row.seq),
      state: row.state,
      attempts: row.attempts,
      action: parseStoredAction(row.action),
    }));
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    if (this.inFlight > 0 || this.pending.length > 0 || this.scheduled) {
      await new Promise<void>((resolve) => this.idle.push(resolve));
    }
    if (this.ownsPool) await closePool(this.pool);
  }

  /** Send what is pending on the next turn, unless two batches are already in flight. */
  private schedule(): void {
    if (this.scheduled || this.pending.length === 0 || this.inFlight >= MAX_IN_FLIGHT) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const batch = this.takeBatch();
      this.inFlight++;
      // More than one statement's worth waiting: the second batch may go at once.
      this.schedule();
      this.commitBatch(batch)
        .catch((err: unknown) => {
          // Not expected (commitBatch answers every failure it knows): refuse rather than hang.
          for (const request of batch) request.reject(err);
        })
        .finally(() => {
          this.inFlight--;
          this.schedule();
          if (this.inFlight === 0 && this.pending.length === 0 && !this.scheduled) {
            for (const resolve of this.idle.splice(0)) resolve();
          }
        });
    });
  }

  /** The oldest pending requests, up to one statement's bounds (always at least one). */
  private takeBatch(): Pending[] {
    let count = 0;
    let bytes = 0;
    for (const request of this.pending) {
      if (count > 0 && (count >= MAX_BATCH_REQUESTS || bytes + request.bytes > MAX_BATCH_BYTES))
        break;
      count++;
      bytes += request.bytes;
    }
    return this.pending.splice(0, count);
  }

  /** Back to the front of the queue, in arrival order, for the next batch. */
  private retry(requests: readonly Pending[], err?: unknown): void {
    const again: Pending[] = [];
    for (const request of requests) {
      request.attempts++;
      if (request.attempts < MAX_ATTEMPTS) again.push(request);
      else request.reject(err ?? new Error('the key stayed contended; nothing was stored'));
    }
    this.pending.unshift(...again);
  }

  /**
   * Commit one batch and answer each request. A request naming a key an earlier request of the
   * batch names waits: it is answered with that request's record once stored.
   */
  private async commitBatch(
    batch: readonly Pending[],
    lockTimeout: string = KEY_LOCK_TIMEOUT,
  ): Promise<void> {
    const owner = new Map<string, Pending>();
    const sent: Pending[] = [];
    const waiting: Pending[] = [];
    for (const request of batch) {
      const first = request.keys.every(({ key }) => (owner.get(key) ?? request) === request);
      for (const { key } of request.keys) if (!owner.has(key)) owner.set(key, request);
      (first ? sent : waiting).push(request);
    }
    const stored = new Set<Pending>();
    try {
      this.answerRows(sent, await this.transact(sent, lockTimeout), stored);
    } catch (err) {
      if (err instanceof PartialBatch || isTransient(err)) {
        this.retry(batch, err);
        return;
      }
      if (err instanceof CommitInDoubt) {
        await this.settleInDoubt(sent, err.result as AcceptRow[], stored, err);
        this.answerWaiting(waiting, owner, stored);
        return;
      }
      if (isLockTimeout(err)) {
        await this.afterLockTimeout(sent, err);
        this.retry(waiting);
        return;
      }
      if (sent.length > 1 && isRequestError(err)) {
        // One request's data broke the statement: each alone, so only that one is refused.
        for (const request of sent) await this.commitBatch([request]);
        this.retry(waiting);
        return;
      }
      for (const request of sent) request.reject(err);
      this.retry(waiting, err);
      return;
    }
    this.answerWaiting(waiting, owner, stored);
  }

  /** Answer the requests of a statement's rows: stored, an earlier record, or tried again. */
  private answerRows(sent: readonly Pending[], rows: readonly AcceptRow[], stored: Set<Pending>) {
    for (const row of rows) {
      const request = sent[row.ord] as Pending;
      if (row.outcome === 'stored') {
        stored.add(request);
        request.resolve({ stored: true });
      } else if (row.outcome === 'held') {
        request.resolve({
          stored: false,
          previous: {
            key: row.key as string,
            fingerprint: row.fingerprint as string,
            actionId: row.action_id as string,
            response: row.response as string,
            createdAtMs: Number(row.created_at_ms),
          },
        });
      } else {
        // Lost to another instance's commit this statement could not see: the next one will.
        this.retry([request]);
      }
    }
  }

  /**
   * A key's lock not given in time. Only requests with keys wait on another transaction's key:
   * those without go on together at once, each keyed one alone (SOLO_AT_ONCE at a time, each
   * waiting SOLO_LOCK_TIMEOUT for its key), and a keyed request alone whose key is still held
   * is refused (its sender tries again later). A batch with no key to blame (a table lock: a
   * migration, VACUUM FULL) goes back to the queue, its attempts counted.
   */
  private async afterLockTimeout(sent: readonly Pending[], err: unknown): Promise<void> {
    const keyed = sent.filter((request) => request.keys.length > 0);
    const keyless = sent.filter((request) => request.keys.length === 0);
    if (keyed.length === 0) {
      this.retry(sent, err);
      return;
    }
    if (sent.length === 1) {
      (sent[0] as Pending).reject(err);
      return;
    }
    const alone = async () => {
      for (let request = keyed.shift(); request; request = keyed.shift())
        await this.commitBatch([request], SOLO_LOCK_TIMEOUT);
    };
    await Promise.all([
      keyless.length > 0 ? this.commitBatch(keyless) : undefined,
      ...Array.from({ length: Math.min(SOLO_AT_ONCE, keyed.length) }, alone),
    ]);
  }

  /**
   * A COMMIT not confirmed. An earlier record (held) was read, not written, and a request lost
   * to another instance is tried again, whatever became of it. For the stored requests, the
   * database is asked (a few looks over about two seconds, each bounded) whether the
   * transaction has ended, then whether their rows are there: found, they get their 200; not,
   * their refusal; still in progress or unknown (the database cannot be asked), a refusal that
   * says they may have been accepted.
   * Answering "nothing was stored" without asking would have a caller send again what runs.
   */
  private async settleInDoubt(
    sent: readonly Pending[],
    rows: readonly AcceptRow[],
    stored: Set<Pending>,
    doubt: CommitInDoubt,
  ): Promise<void> {
    const storing = rows.filter((row) => row.outcome === 'stored');
    this.answerRows(
      sent,
      rows.filter((row) => row.outcome !== 'stored'),
      stored,
    );
    if (storing.length === 0) return;
    // The transaction's id tells whether it has ended; whether it stored is read from the rows
    // (a transaction whose COMMIT never reached the disk leaves its id to be given again after a
    // crash, to a transaction that may commit).
    let committed: boolean | undefined;
    for (const pause of IN_DOUBT_LOOKS_MS) {
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
      const fate = await this.bounded(this.transactionStatus((storing[0] as AcceptRow).xid));
      if (fate === undefined || fate === 'in progress') continue;
      committed = await this.bounded(
        this.anyStored(
          storing.map((row) => row.ord),
          sent,
        ),
      );
      if (committed !== undefined) break;
    }
    if (committed === true) {
      this.answerRows(sent, storing, stored);
      return;
    }
    const err = committed === false ? doubt : new AppendInDoubt(doubt);
    for (const row of storing) (sent[row.ord] as Pending).reject(err);
  }

  /** pg_xact_status of a transaction: 'committed', 'aborted', 'in progress', or null (unknown). */
  private async transactionStatus(xid: string): Promise<string | null> {
    const { rows } = await this.pool.query<{ status: string | null }>(
      'SELECT pg_xact_status($1::xid8) AS status',
      [xid],
    );
    return rows[0]?.status ?? null;
  }

  /** Whether the requests at `ords` were stored (a batch commits whole or not at all). */
  private async anyStored(ords: readonly number[], sent: readonly Pending[]): Promise<boolean> {
    const ids = ords
      .map((ord) => (sent[ord] as Pending).actions[0]?.id)
      .filter((id): id is string => id !== undefined);
    const { rows } = await this.pool.query<{ found: boolean }>(
      'SELECT EXISTS (SELECT 1 FROM actions WHERE id = ANY($1::text[])) AS found',
      [ids],
    );
    return rows[0]?.found === true;
  }

  /** A look at the database, undefined when it fails or takes too long (it may be unreachable). */
  private async bounded<T>(look: Promise<T>): Promise<T | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), IN_DOUBT_LOOK_TIMEOUT_MS);
    });
    try {
      return await Promise.race([look.catch(() => undefined), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Requests that shared a key with an earlier one: its record if it stored, else try again. */
  private answerWaiting(
    waiting: readonly Pending[],
    owner: ReadonlyMap<string, Pending>,
    stored: ReadonlySet<Pending>,
  ): void {
    const again: Pending[] = [];
    for (const request of waiting) {
      const winner = request.keys
        .map(({ key }) => owner.get(key))
        .find((first) => first && first !== request && stored.has(first));
      const record = winner?.keys.find(({ key }) => request.keys.some((k) => k.key === key));
      if (record) request.resolve({ stored: false, previous: recordOf(record) });
      else again.push(request);
    }
    // Not attempts: each round here follows a commit that decided another request.
    this.pending.unshift(...again);
  }

  /** Run the accept statement in a transaction; COMMIT unless a request won only part. */
  private async transact(batch: readonly Pending[], lockTimeout: string): Promise<AcceptRow[]> {
    if (batch.length === 0) return [];
    return inTransaction(
      this.pool,
      async (client) => {
        const { rows } = await client.query<AcceptRow>(ACCEPT, acceptParams(batch));
        if (rows.some((row) => row.outcome === 'partial')) throw new PartialBatch('partial keys');
        return rows;
      },
      { begin: beginAccept(lockTimeout), timeoutMs: ACCEPT_TIMEOUT_MS },
    );
  }
}

/**
 * Open the store over a pool (left open at close) or connection settings (a pool of its own,
 * ended at close). Creates or migrates the schema first.
 */
export async function openPostgresStore(
  target: pg.Pool | PostgresSettings,
  options: { migrate?: boolean } = {},
): Promise<ActionStore> {
  const owns = !(target instanceof pg.Pool);
  const pool = target instanceof pg.Pool ? target : openPool(target);
  try {
    // The caller may have migrated (or checked the version) already.
    if (options.migrate !== false) await migratePostgres(pool);
  } catch (err) {
    if (owns) await closePool(pool);
    throw err;
  }
  return new PostgresActionStore(pool, owns);
}

/**
 * The connection pool of the PostgreSQL store: one per instance, shared by
 * accepting and the runtime, and how a connection is taken from it (checked
 * out with an error listener, raced against a deadline, one transaction at a
 * time). Its settings bound what a stuck statement or a forgotten transaction
 * can cost the queue.
 */
import pg from 'pg';

/** Where the shared store is and how many connections this instance may hold. */
export type PostgresSettings = {
  url: string;
  /** Connections this instance opens at most (default 10). */
  poolSize?: number;
  /** Told about an idle connection's failure (the next query simply takes a fresh one). */
  onError?: (err: Error) => void;
  /** The server ends a statement running longer (default 30 s). */
  statementTimeoutMs?: number;
};

export const DEFAULT_POOL_SIZE = 10;

/** Open a pool; connections are made on first use. */
export function openPool(settings: PostgresSettings): pg.Pool {
  const pool = new pg.Pool({
    connectionString: settings.url,
    max: settings.poolSize ?? DEFAULT_POOL_SIZE,
    // Waiting longer for a connection than a caller waits for its answer helps nobody.
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: 'hookgate',
    // Queue statements take milliseconds; one that takes this long is stuck (a lock, a dead disk).
    statement_timeout: settings.statementTimeoutMs ?? 30_000,
    // An open transaction left idle pins the MVCC horizon of the hot queue table and its locks.
    idle_in_transaction_session_timeout: 60_000,
  });
  // Without a listener, an idle client's error (a server restart, a dropped socket) would be
  // an uncaught 'error' event and end the process.
  pool.on('error', (err) => settings.onError?.(err));
  return pool;
}

/** End the pool's connections once (a second call is a no-op). */
export async function closePool(pool: pg.Pool): Promise<void> {
  if (pool.ended || pool.ending) return;
  await pool.end();
}

/** A connection checked out of the pool, until it goes back. */
export type CheckedOut = {
  client: pg.PoolClient;
  /** Name why the connection is no good (the first reason counts): released, it is destroyed. */
  fail(err: Error): void;
  /** Give the connection back, or destroy it if it failed. */
  release(): void;
};

/**
 * Check a connection out. While checked out it has no 'error' listener of the pool's, so a reset
 * socket would be an uncaught exception: one is attached here, and counts as a failure.
 */
export async function checkOut(pool: pg.Pool): Promise<CheckedOut> {
  const client = await pool.connect();
  let failure: Error | undefined;
  const fail = (err: Error) => {
    failure ??= err;
  };
  client.on('error', fail);
  return {
    client,
    fail,
    release() {
      client.off('error', fail);
      client.release(failure);
    },
  };
}

/**
 * `step` or the deadline, whichever is first. What is left waiting when the time is up rejects
 * once its connection is dropped: unheard.
 */
export function beforeDeadline<R>(step: Promise<R>, expired: Promise<never>): Promise<R> {
  step.catch(() => undefined);
  return Promise.race([step, expired]);
}

/**
 * The COMMIT was sent and did not answer OK: the connection lost, the backend ended while the
 * COMMIT waited for a synchronous standby (PostgreSQL: "the transaction has already committed
 * locally"), a server error. The transaction may or may not have committed; `result` is what
 * the work returned.
 */
export class CommitInDoubt<T = unknown> extends Error {
  readonly result: T;
  constructor(result: T, cause: unknown) {
    super('the COMMIT was not confirmed: the transaction may or may not have committed', {
      cause,
    });
    this.name = 'CommitInDoubt';
    this.result = result;
  }
}

/**
 * The transaction did not end within its time: the database stopped answering (a hung host, a
 * partition that drops packets), which its own statement timeout cannot end. Nothing was
 * committed unless it is thrown as CommitInDoubt's cause.
 */
export class TransactionTimeout extends Error {
  constructor(ms: number) {
    super(`the database did not answer within ${ms} ms`);
    this.name = 'TransactionTimeout';
  }
}

/**
 * Run work in one transaction on one connection (checkOut): BEGIN, the work, COMMIT; ROLLBACK
 * when the work throws (the error is rethrown). A connection that failed (its socket, or a
 * ROLLBACK) is destroyed, not given back; after a statement's error rolled back it is as good
 * as new. A COMMIT not confirmed throws CommitInDoubt. `begin`: the statement that opens the
 * transaction (with its SET LOCALs). `timeoutMs`: the whole transaction's bound on this side
 * (TransactionTimeout; the connection is dropped, which ends the transaction on the server
 * whenever it answers again).
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  options: { begin?: string; timeoutMs?: number } = {},
): Promise<T> {
  const held = await checkOut(pool);
  const { client } = held;
  let timer: NodeJS.Timeout | undefined;
  const { timeoutMs } = options;
  const expired =
    timeoutMs === undefined
      ? undefined
      : new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new TransactionTimeout(timeoutMs)), timeoutMs);
        });
  const within = <R>(step: Promise<R>): Promise<R> =>
    expired ? beforeDeadline(step, expired) : step;
  try {
    await within(client.query(options.begin ?? 'BEGIN'));
    let result: T;
    try {
      result = await within(work(client));
    } catch (err) {
      if (err instanceof TransactionTimeout) held.fail(err);
      else await within(client.query('ROLLBACK')).catch(held.fail);
      throw err;
    }
    try {
      await within(client.query('COMMIT'));
    } catch (err) {
      held.fail(err as Error);
      throw new CommitInDoubt(result, err);
    }
    return result;
  } catch (err) {
    if (err instanceof TransactionTimeout) held.fail(err);
    throw err;
  } finally {
    clearTimeout(timer);
    held.release();
  }
}

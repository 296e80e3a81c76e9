/**
 * Single statements bounded on this side, for work that has somewhere else to go when the
 * database does not answer (the failed-auth limiter counts in memory meanwhile). A database
 * that stops answering without closing its sockets (a host gone without a reset, a partition
 * that drops packets) ends nothing by itself: its own statement timeout never fires, and a
 * connection waiting on it stays in use until TCP gives up, which behind a proxy or a NAT that
 * still answers may be never. So each statement has a deadline from the moment it is asked
 * for, waiting for a connection included; one that misses it while on the wire drops its
 * connection (the pool opens a fresh one for the next), one still waiting for a connection is
 * never sent (a late count would count a failure the fallback counted already), and at most
 * `maxPending` wait or run at once: past that a statement is refused at once, so a flood
 * meanwhile queues nothing.
 */
import type pg from 'pg';
import { beforeDeadline, checkOut } from './pool.ts';

/** The database did not answer the statement within its deadline (nothing to wait for). */
export class StatementDeadline extends Error {
  constructor(ms: number) {
    super(`the database did not answer within ${ms} ms`);
    this.name = 'StatementDeadline';
  }
}

/** Refused unsent: `maxPending` statements already wait for the database. */
export class StatementsBacklogged extends Error {
  constructor(max: number) {
    super(`${max} statements already wait for the database`);
    this.name = 'StatementsBacklogged';
  }
}

export type BoundedStatements = {
  /**
   * Run one statement on a pooled connection within the deadline, which starts now: a statement
   * still being worked out (`config` a promise) waits for it within the same deadline.
   */
  query<R extends pg.QueryResultRow>(
    config: pg.QueryConfig | Promise<pg.QueryConfig>,
  ): Promise<pg.QueryResult<R>>;
  /** Statements waiting for a connection or an answer, those past their deadline included. */
  pending(): number;
};

/** Statements over `pool`, each answered or failed within `deadlineMs`. */
export function boundedStatements(
  pool: pg.Pool,
  { deadlineMs, maxPending }: { deadlineMs: number; maxPending: number },
): BoundedStatements {
  let pending = 0;

  async function run<R extends pg.QueryResultRow>(
    pendingConfig: pg.QueryConfig | Promise<pg.QueryConfig>,
    expired: Promise<never>,
    isExpired: () => boolean,
  ): Promise<pg.QueryResult<R>> {
    const config = await pendingConfig;
    if (isExpired()) return expired;
    // A pool's wait for a connection is bounded by its own connection timeout, not by ours:
    // what it hands over past the deadline goes back unused.
    const held = await checkOut(pool);
    if (isExpired()) {
      held.release();
      return expired;
    }
    try {
      return await beforeDeadline(held.client.query<R>(config), expired);
    } catch (err) {
      if (err instanceof StatementDeadline) held.fail(err);
      throw err;
    } finally {
      // With a failure the pool destroys the connection (one whose statement is unanswered is
      // ended at once); a statement's own error leaves it as good as new.
      held.release();
    }
  }

  return {
    query<R extends pg.QueryResultRow>(config: pg.QueryConfig | Promise<pg.QueryConfig>) {
      if (pending >= maxPending) return Promise.reject(new StatementsBacklogged(maxPending));
      pending++;
      let timedOut = false;
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          timedOut = true;
          reject(new StatementDeadline(deadlineMs));
        }, deadlineMs);
      });
      expired.catch(() => undefined);
      const work = run<R>(config, expired, () => timedOut);
      // Counted until the pool has let go of it, past the deadline too: that is what it holds.
      void work
        .catch(() => undefined)
        .finally(() => {
          pending--;
          clearTimeout(timer);
        });
      return Promise.race([work, expired]);
    },
    pending: () => pending,
  };
}

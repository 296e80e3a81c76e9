/**
 * What one instance of the PostgreSQL failed-auth limiter knows, without the store, of the
 * addresses with failures counted there: those it counted itself, and those the last read of
 * the store found, each at most `maxClients`. When either cannot hold them all (a flood from
 * more addresses than that), no address is ruled out: a wrong "may have" costs a reset that
 * deletes nothing, a wrong "has none" left a client's count standing after its success, and
 * with its next few failures it was locked out.
 */

export type CountingView = {
  /** This instance counted a failure for the address. */
  counted(client: string): void;
  /** The address's count is gone: it locked, or a reset was sent. */
  forget(client: string): void;
  /** Taken just before a read of the counting addresses is sent; given back to `read`. */
  mark(): number;
  /** What the read begun at `mark` found: at most `maxClients + 1` counting addresses. */
  read(mark: number, clients: readonly string[]): void;
  /** Whether the address may have a count in the store (false only when it cannot). */
  mayHave(client: string): boolean;
};

/** An empty view that keeps at most `maxClients` addresses of each kind. */
export function createCountingView(maxClients: number): CountingView {
  // Counted here, least recently first (the bound drops the oldest).
  const own = new Set<string>();
  // Counted by any instance, as of the last read.
  let stored = new Set<string>();
  // Whether the two may miss a count: the last read found more than maxClients, or `own`
  // dropped one since that read began.
  let crowded = false;
  let dropped = 0;
  // Reset since the last read (at most maxClients, the oldest dropped): while crowded, without
  // it every success sent a reset, a write per authenticated request on the database a flood
  // from many addresses already loads. A count another instance makes after the reset is seen
  // at the next read, as any count from elsewhere is.
  const reset = new Set<string>();
  return {
    counted(client) {
      reset.delete(client);
      own.delete(client);
      own.add(client);
      if (own.size <= maxClients) return;
      own.delete(own.values().next().value as string);
      dropped++;
      crowded = true;
    },
    forget(client) {
      own.delete(client);
      stored.delete(client);
      reset.delete(client);
      reset.add(client);
      if (reset.size > maxClients) reset.delete(reset.values().next().value as string);
    },
    mark: () => dropped,
    read(mark, clients) {
      const full = clients.length > maxClients;
      stored = new Set(full ? [] : clients);
      // A count dropped during the read may have been written after the read's snapshot:
      // only a read begun after the drop has seen it.
      crowded = full || dropped !== mark;
      reset.clear();
    },
    mayHave: (client) => (crowded && !reset.has(client)) || own.has(client) || stored.has(client),
  };
}

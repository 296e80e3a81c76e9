/**
 * The journal's live feed: new records passed to the subscribers in batches,
 * at most one batch per `intervalMs` (the first after a quiet spell as soon
 * as the turn ends), so a flood of requests costs each subscriber one write
 * per interval, not one per request. Nothing is dropped or reordered: what
 * waits is what came within one interval. Subscribers are capped.
 */

/** Receives the records that came since the last batch, oldest first (the same array for all). */
export type LiveListener<T> = (batch: readonly T[]) => void;

export type LiveFeedSettings = { maxSubscribers: number; intervalMs: number };

export class LiveFeed<T> {
  private readonly listeners = new Set<LiveListener<T>>();
  private readonly settings: LiveFeedSettings;
  private pending: T[] = [];
  private timer: NodeJS.Timeout | undefined;
  private lastFlush = Number.NEGATIVE_INFINITY;

  constructor(settings: LiveFeedSettings) {
    this.settings = settings;
  }

  /** Add a subscriber; undefined when the cap is reached. Returns the unsubscribe. */
  subscribe(listener: LiveListener<T>): (() => void) | undefined {
    if (this.listeners.size >= this.settings.maxSubscribers) return undefined;
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Pass one item on with the next batch (nothing is held while nobody listens). */
  push(item: T): void {
    if (this.listeners.size === 0) return;
    this.pending.push(item);
    if (this.timer) return;
    const wait = Math.max(0, this.lastFlush + this.settings.intervalMs - performance.now());
    this.timer = setTimeout(this.flush, wait);
    this.timer.unref();
  }

  /** Forget the subscribers and what was still to be passed on. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending = [];
    this.listeners.clear();
  }

  private readonly flush = (): void => {
    this.timer = undefined;
    this.lastFlush = performance.now();
    const batch = this.pending;
    this.pending = [];
    for (const listener of this.listeners) listener(batch);
  };
}

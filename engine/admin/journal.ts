/**
 * The request journal: the last `recentRequests` answered requests, taken
 * from the `requestFinished` diagnostics channel, for the console. Memory
 * is bounded three ways: the number of records (a ring), each kept body and
 * prompt, and the total bytes of kept requests (body, headers, query) and
 * prompts (the oldest give theirs up first). Live subscribers are capped; a
 * slow one is the server's to drop.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { type RequestFinished, requestFinished } from '../observe/events.ts';
import { type JournalRecord, journalRecord, type RecordLimits } from './journal-record.ts';

export type JournalSettings = {
  recentRequests: number;
  keepPayloads: boolean;
  /** Bound of each kept body: hooks.maxBodyBytes, as the configuration now in force has it. */
  maxBodyBytes: () => number;
  /** The hook credentials in force: a kept header holding one is dropped. */
  credentials?: () => readonly string[];
  /** Bound of the kept requests and prompts held together (default 64 MiB). */
  maxTotalBytes?: number;
  /** Bound of each prompt, in characters (default 16 Ki). */
  maxPromptChars?: number;
  /** Live subscribers at once (default 16). */
  maxSubscribers?: number;
};

export type JournalListener = (record: JournalRecord) => void;

const CHANNEL = requestFinished.name;

/** The last answered requests, newest first, and a live feed of new ones. */
export class RequestJournal {
  readonly keepPayloads: boolean;
  private readonly ring: Array<JournalRecord | undefined>;
  private next = 0;
  private readonly byId = new Map<string, JournalRecord>();
  // Records holding bodies or prompts, oldest first: who gives them up when over budget.
  private readonly heavy: JournalRecord[] = [];
  private heavyBytes = 0;
  private readonly limits: RecordLimits;
  private readonly maxTotalBytes: number;
  private readonly maxSubscribers: number;
  private readonly listeners = new Set<JournalListener>();
  private readonly onMessage = (message: unknown) => this.add(message as RequestFinished);
  private subscribed = false;

  constructor(settings: JournalSettings) {
    this.ring = new Array(settings.recentRequests);
    this.keepPayloads = settings.keepPayloads;
    this.limits = {
      keepPayloads: settings.keepPayloads,
      maxBodyBytes: settings.maxBodyBytes,
      maxPromptChars: settings.maxPromptChars ?? 16_384,
      ...(settings.credentials && { credentials: settings.credentials }),
    };
    this.maxTotalBytes = settings.maxTotalBytes ?? 64 * 1024 * 1024;
    this.maxSubscribers = settings.maxSubscribers ?? 16;
  }

  /** Listen on the requestFinished channel (idempotent). */
  start(): this {
    if (!this.subscribed) subscribe(CHANNEL, this.onMessage);
    this.subscribed = true;
    return this;
  }

  /** Stop listening and forget the live subscribers. */
  stop(): void {
    if (this.subscribed) unsubscribe(CHANNEL, this.onMessage);
    this.subscribed = false;
    this.listeners.clear();
  }

  /** Remember one answered request and tell the live subscribers. */
  add(event: RequestFinished): JournalRecord {
    const record = journalRecord(event, this.limits);
    const old = this.ring[this.next];
    if (old) this.forget(old);
    this.ring[this.next] = record;
    this.next = (this.next + 1) % this.ring.length;
    this.byId.set(record.id, record);
    const bytes = weight(record);
    if (bytes > 0) {
      this.heavy.push(record);
      this.heavyBytes += bytes;
      this.shed();
    }
    for (const listener of this.listeners) listener(record);
    return record;
  }

  /** Records newest first. */
  list(): JournalRecord[] {
    const out: JournalRecord[] = [];
    const size = this.ring.length;
    for (let i = 1; i <= size; i += 1) {
      const record = this.ring[(this.next - i + size) % size];
      if (!record) break;
      out.push(record);
    }
    return out;
  }

  get(id: string): JournalRecord | undefined {
    return this.byId.get(id);
  }

  /** Add a live subscriber; undefined when the cap is reached. Returns the unsubscribe. */
  subscribe(listener: JournalListener): (() => void) | undefined {
    if (this.listeners.size >= this.maxSubscribers) return undefined;
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private forget(record: JournalRecord): void {
    this.byId.delete(record.id);
    const at = this.heavy.indexOf(record);
    if (at >= 0) {
      this.heavy.splice(at, 1);
      this.heavyBytes -= weight(record);
    }
  }

  // Over the total: the oldest records give up their bodies and prompts (they keep the rest).
  private shed(): void {
    while (this.heavyBytes > this.maxTotalBytes && this.heavy.length > 1) {
      const oldest = this.heavy.shift() as JournalRecord;
      this.heavyBytes -= weight(oldest);
      delete oldest.payload;
      for (const action of oldest.actions) {
        action.prompt = '';
        action.truncated = true;
      }
    }
  }
}

/**
 * Bytes of the request parts and prompts a record holds (UTF-16 prompts counted twice per
 * char). The headers and query count too: a signed route keeps them before its signature is
 * checked, and an empty body can come with 16 KB of them.
 */
function weight(record: JournalRecord): number {
  const payload = record.payload;
  let bytes = payload ? payload.body.length + payload.query.length : 0;
  for (const [name, value] of Object.entries(payload?.headers ?? {}))
    bytes += name.length + value.length;
  for (const action of record.actions) bytes += action.prompt.length * 2;
  return bytes;
}

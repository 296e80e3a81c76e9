/**
 * The request journal: the last answered requests, taken from the
 * `requestFinished` diagnostics channel, for the console. Requests answered
 * before their caller was authenticated (wrong tokens, bad signatures,
 * unknown paths, lockouts) are held in a ring of their own, so that anyone
 * who can reach the hooks cannot push the real traffic out: each ring keeps
 * the last `recentRequests` of its kind, and its own share of the bytes kept
 * (bodies, headers, queries, prompts: each bounded, the oldest giving theirs
 * up first). Lists merge both, newest first. Live subscribers get new
 * records in batches (live-feed.ts) and are capped; a slow one is the
 * server's to drop.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { type RequestFinished, requestFinished } from '../observe/events.ts';
import { type JournalRecord, journalRecord, type RecordLimits } from './journal-record.ts';
import { LiveFeed, type LiveListener } from './live-feed.ts';
import { RecordRing } from './record-ring.ts';

export type JournalSettings = {
  recentRequests: number;
  keepPayloads: boolean;
  /** Bound of each kept body: hooks.maxBodyBytes, as the configuration now in force has it. */
  maxBodyBytes: () => number;
  /** The hook credentials in force: a kept header holding one is dropped. */
  credentials?: () => readonly string[];
  /**
   * Bound of the kept requests and prompts held together (default 64 MiB): a quarter of it for
   * requests answered before authentication, the rest for authenticated ones.
   */
  maxTotalBytes?: number;
  /** Bound of each prompt, in characters (default 16 Ki). */
  maxPromptChars?: number;
  /** Live subscribers at once (default 16). */
  maxSubscribers?: number;
};

/** Receives the requests answered since its last call, oldest first. */
export type JournalListener = LiveListener<JournalRecord>;

// New records reach the live subscribers at most this often, in one batch (live-feed.ts).
const LIVE_INTERVAL_MS = 100;

const CHANNEL = requestFinished.name;

// The share of the total bytes that requests answered before authentication may keep.
const UNAUTHENTICATED_SHARE = 1 / 4;

/** The last answered requests, newest first, and a live feed of new ones. */
export class RequestJournal {
  readonly keepPayloads: boolean;
  private readonly authenticated: RecordRing;
  private readonly unauthenticated: RecordRing;
  private seq = 0;
  private readonly byId = new Map<string, JournalRecord>();
  private readonly limits: RecordLimits;
  private readonly feed: LiveFeed<JournalRecord>;
  private readonly onMessage = (message: unknown) => this.add(message as RequestFinished);
  private subscribed = false;

  constructor(settings: JournalSettings) {
    this.keepPayloads = settings.keepPayloads;
    this.limits = {
      keepPayloads: settings.keepPayloads,
      maxBodyBytes: settings.maxBodyBytes,
      maxPromptChars: settings.maxPromptChars ?? 16_384,
      ...(settings.credentials && { credentials: settings.credentials }),
    };
    const total = settings.maxTotalBytes ?? 64 * 1024 * 1024;
    const share = Math.floor(total * UNAUTHENTICATED_SHARE);
    this.authenticated = new RecordRing(settings.recentRequests, total - share);
    this.unauthenticated = new RecordRing(settings.recentRequests, share);
    this.feed = new LiveFeed({
      maxSubscribers: settings.maxSubscribers ?? 16,
      intervalMs: LIVE_INTERVAL_MS,
    });
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
    this.feed.stop();
  }

  /** Remember one answered request and tell the live subscribers. */
  add(event: RequestFinished): JournalRecord {
    const record = journalRecord(event, this.limits);
    const ring = record.authenticated ? this.authenticated : this.unauthenticated;
    this.seq += 1;
    const old = ring.push(record, this.seq);
    if (old) this.byId.delete(old.id);
    this.byId.set(record.id, record);
    this.feed.push(record);
    return record;
  }

  /** Records of both rings, newest first (in the order they were answered). */
  list(): JournalRecord[] {
    const a = this.authenticated;
    const b = this.unauthenticated;
    const out: JournalRecord[] = new Array(a.size + b.size);
    let i = 0;
    let j = 0;
    while (i + j < out.length) {
      const fromA = j >= b.size || (i < a.size && a.seqAt(i) > b.seqAt(j));
      out[i + j] = fromA ? a.at(i++) : b.at(j++);
    }
    return out;
  }

  get(id: string): JournalRecord | undefined {
    return this.byId.get(id);
  }

  /** Add a live subscriber; undefined when the cap is reached. Returns the unsubscribe. */
  subscribe(listener: JournalListener): (() => void) | undefined {
    return this.feed.subscribe(listener);
  }
}

/**
 * One ring of the request journal: the last `capacity` records of one kind,
 * each with the journal's sequence number (the order the rings are merged
 * in), and the bytes its records keep (bodies, headers, queries, prompts)
 * bounded by `maxBytes`: past it, its oldest give theirs up first. What one
 * ring holds never costs another a record or a byte.
 */
import type { JournalRecord } from './journal-record.ts';

export class RecordRing {
  private readonly records: Array<JournalRecord | undefined>;
  private readonly seqs: number[];
  private next = 0;
  private count = 0;
  private readonly maxBytes: number;
  // Records holding bodies or prompts, oldest first: who gives them up when over budget.
  private readonly heavy: JournalRecord[] = [];
  private heavyBytes = 0;

  constructor(capacity: number, maxBytes: number) {
    this.records = new Array(capacity);
    this.seqs = new Array(capacity).fill(0);
    this.maxBytes = maxBytes;
  }

  /** Records held. */
  get size(): number {
    return this.count;
  }

  /** Add the newest record under `seq`; returns the oldest when it was pushed out. */
  push(record: JournalRecord, seq: number): JournalRecord | undefined {
    const old = this.records[this.next];
    // Heavy records are in the ring's order, so a heavy one leaving is the oldest of them.
    if (old && this.heavy[0] === old) {
      this.heavy.shift();
      this.heavyBytes -= weight(old);
    }
    this.records[this.next] = record;
    this.seqs[this.next] = seq;
    this.next = (this.next + 1) % this.records.length;
    if (!old) this.count += 1;
    const bytes = weight(record);
    if (bytes > 0) {
      this.heavy.push(record);
      this.heavyBytes += bytes;
      this.shed();
    }
    return old;
  }

  /** The `i`th newest record (0 the newest; below size). */
  at(i: number): JournalRecord {
    return this.records[this.slot(i)] as JournalRecord;
  }

  /** The sequence number of the `i`th newest record. */
  seqAt(i: number): number {
    return this.seqs[this.slot(i)] as number;
  }

  private slot(i: number): number {
    const size = this.records.length;
    return (this.next - 1 - i + size * 2) % size;
  }

  // Over the bound: the oldest records give up their bodies and prompts (they keep the rest).
  private shed(): void {
    while (this.heavyBytes > this.maxBytes && this.heavy.length > 1) {
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

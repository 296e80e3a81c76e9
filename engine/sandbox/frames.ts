/**
 * Length-prefixed JSON frames between the server and a transform process
 * (4-byte big-endian length, then UTF-8 JSON). The reader holds at most one
 * frame's bytes and refuses a frame whose declared length is over its cap
 * before buffering it, so a process that floods or lies about sizes cannot
 * grow the server's memory.
 */
import type { Writable } from 'node:stream';

/** One value as a frame. */
export function encodeFrame(value: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(value), 'utf8');
  const frame = Buffer.allocUnsafe(4 + body.length);
  frame.writeUInt32BE(body.length, 0);
  body.copy(frame, 4);
  return frame;
}

/**
 * A writer of encoded frames that sends those written in one event-loop turn in one write: under load
 * one system call (and one wake-up of the reading process) carries many calls, not one each.
 * They leave in the loop's check phase (setImmediate): for calls made while reading requests,
 * before the next poll for I/O. Not for a transform process's
 * answers: its calls run back to back in one turn, and an answer must not wait for the calls
 * after it.
 */
export function turnWriter(stream: Writable): (frame: Buffer) => void {
  let corked = false;
  const uncork = () => {
    corked = false;
    stream.uncork();
  };
  return (frame) => {
    if (!corked) {
      corked = true;
      stream.cork();
      setImmediate(uncork);
    }
    stream.write(frame);
  };
}

/** What a chunk of bytes yielded: complete frame texts, or why the stream is refused. */
export type FrameBatch = { frames: string[]; error?: string };

/** Incremental frame decoder with a size cap per frame. */
export class FrameReader {
  readonly #maxBytes: number;
  #chunks: Buffer[] = [];
  #buffered = 0;
  #failed = false;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Add bytes; returns the frames now complete (after an error, nothing more). */
  push(chunk: Buffer): FrameBatch {
    const frames: string[] = [];
    if (this.#failed) return { frames, error: 'stream already refused' };
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    for (;;) {
      if (this.#buffered < 4) return { frames };
      const head = this.#peek(4);
      const length = head.readUInt32BE(0);
      if (length > this.#maxBytes) {
        this.#failed = true;
        this.#chunks = [];
        return { frames, error: `a frame of ${length} bytes is over the cap of ${this.#maxBytes}` };
      }
      if (this.#buffered < 4 + length) return { frames };
      const whole = this.#take(4 + length);
      frames.push(whole.toString('utf8', 4));
    }
  }

  #peek(n: number): Buffer {
    const first = this.#chunks[0] as Buffer;
    if (first.length >= n) return first;
    const all = Buffer.concat(this.#chunks);
    this.#chunks = [all];
    return all;
  }

  #take(n: number): Buffer {
    const all =
      this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks);
    this.#chunks = all.length > n ? [all.subarray(n)] : [];
    this.#buffered -= n;
    return all.subarray(0, n);
  }
}

/**
 * True when JSON text nests deeper than `limit` (brackets outside strings).
 * Checked before JSON.parse: deep nesting is slow to parse and never legitimate here.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > limit) return true;
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return false;
}

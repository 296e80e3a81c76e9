/**
 * Collecting what a peer sends (an HTTP answer, a runner's stdout) under a
 * byte cap, in one buffer that grows by doubling. Keeping each chunk as it
 * came cost a Buffer object per chunk: an answer trickled a byte at a time
 * held about 370 bytes of memory per byte received (a 1 MB answer, the
 * default cap, about 370 MB per run). Here it costs at most twice its bytes.
 */

/** What is kept of the bytes added, past which nothing more is. */
export type ByteCollector = {
  /** Keep `chunk`; false (nothing kept from it) once the bytes received pass the cap. */
  add(chunk: Buffer): boolean;
  /** Every byte offered, the refused ones included. */
  received(): number;
  /** The bytes kept, in order (a view: valid until the next add). */
  bytes(): Buffer;
};

/** A collector of at most `maxBytes`. */
export function collectBytes(maxBytes: number): ByteCollector {
  let buffer = Buffer.alloc(0);
  let kept = 0;
  let received = 0;
  return {
    add(chunk) {
      received += chunk.length;
      if (received > maxBytes) return false;
      if (kept + chunk.length > buffer.length) {
        // Doubling keeps the copies linear in the bytes; an answer in one chunk is one copy.
        const wanted = Math.max(kept + chunk.length, buffer.length * 2);
        const grown = Buffer.allocUnsafe(Math.min(maxBytes, wanted));
        buffer.copy(grown, 0, 0, kept);
        buffer = grown;
      }
      chunk.copy(buffer, kept);
      kept += chunk.length;
      return true;
    },
    received: () => received,
    bytes: () => buffer.subarray(0, kept),
  };
}

/**
 * Collecting what a peer sends (a request body, an HTTP answer, a runner's stdout) under a
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
  let buffer: Buffer = Buffer.alloc(0);
  let kept = 0;
  let received = 0;
  return {
    add(chunk) {
      received += chunk.length;
      if (received > maxBytes) return false;
      // The first chunk is kept as it came (most answers and bodies are one chunk: no copy);
      // the next is never written into it, as the first grow replaces it.
      if (kept === 0 && buffer.length === 0) {
        buffer = chunk;
        kept = chunk.length;
        return true;
      }
      if (kept + chunk.length > buffer.length) {
        // Doubling keeps the copies linear in the bytes.
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

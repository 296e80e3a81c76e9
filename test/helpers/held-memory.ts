/**
 * Memory this process holds after a full collection: the heap and the buffers outside it. For
 * tests that bound what hostile input can make the process keep (the collector is exposed here).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
/** A full garbage collection. */
export const gc = runInNewContext('gc') as () => void;

/** Bytes held after a collection: heap used plus array buffers. */
export function heldMemory(): number {
  gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

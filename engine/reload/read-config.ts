/**
 * Reading the config file for a reload off the main thread. Parsing YAML is
 * synchronous and can be slow on a hostile or mistaken file (a large file,
 * a mapping of many thousand keys, whose duplicate check is quadratic): on
 * the main thread it stalled every request for seconds or minutes, or ran
 * the process out of memory. A worker reads it under a deadline and a heap
 * limit, and what it cannot read in them is a failed reload that changes
 * nothing. `serve` and `check` read on the main thread, as nothing is served yet.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { ConfigError } from '../config.ts';

/** How long a reload may take to read and parse the config file. */
export const READ_TIMEOUT_MS = 10_000;
/** The parsing worker's heap. */
const READ_HEAP_MB = 256;

export type ConfigDocument = { absolute: string; raw: unknown };

/** Read and parse the config file in a worker (ConfigError when it cannot, in time or at all). */
export async function readConfigOffThread(
  file: string,
  timeoutMs = READ_TIMEOUT_MS,
): Promise<ConfigDocument> {
  const absolute = path.resolve(file);
  // A FIFO or device would block the worker's read where no deadline can end it.
  let regular: boolean;
  try {
    regular = statSync(absolute).isFile();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError('', `cannot read config file ${absolute}: ${code}`);
  }
  if (!regular) throw new ConfigError('', `config file ${absolute} is not a regular file`);
  const worker = new Worker(new URL('./read-config-worker.ts', import.meta.url), {
    workerData: { file: absolute },
    resourceLimits: { maxOldGenerationSizeMb: READ_HEAP_MB },
    stdout: true,
    stderr: true,
  });
  return new Promise<ConfigDocument>((resolve, reject) => {
    const fail = (message: string) => reject(new ConfigError('', message));
    const timer = setTimeout(() => {
      fail(`reading ${absolute} took longer than ${timeoutMs} ms`);
      void worker.terminate();
    }, timeoutMs);
    worker.once('message', (answer: { doc?: ConfigDocument; message?: string }) => {
      clearTimeout(timer);
      if (answer.doc) resolve(answer.doc);
      else fail(answer.message ?? `cannot read ${absolute}`);
      void worker.terminate();
    });
    worker.once('error', (err) => {
      clearTimeout(timer);
      fail(`cannot read ${absolute}: ${err.message}`);
    });
    worker.once('exit', () => {
      clearTimeout(timer);
      fail(`cannot read ${absolute}: the reader stopped`);
    });
  });
}

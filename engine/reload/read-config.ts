/**
 * Reading the config file for a reload off the main thread. Parsing YAML is
 * synchronous and can be slow on a hostile or mistaken file (a large file,
 * a mapping of many thousand keys, whose duplicate check is quadratic): on
 * the main thread it stalled every request for seconds or minutes, or ran
 * the process out of memory. The file is read here (a regular file of at
 * most MAX_CONFIG_BYTES, checked on what was opened) and parsed by a worker
 * under a deadline and a heap limit; what it cannot parse in them is a
 * failed reload that changes nothing. `serve` and `check` read on the main
 * thread, as nothing is served yet.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { ConfigError } from '../config.ts';
import { readConfigTextAsync } from '../config-document.ts';

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
  // Read here, from what was opened (never reopened by name): a FIFO swapped in after a check
  // of the path held the worker in open(2), where no terminate reaches, and the process with it.
  const text = await readConfigTextAsync(absolute);
  const worker = new Worker(new URL('./read-config-worker.ts', import.meta.url), {
    workerData: { file: absolute, text },
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

/**
 * The worker of read-config.ts: read and parse one config file, answer the
 * document or the error's message (never a stack).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { readConfigDocument } from '../config-document.ts';

const { file } = workerData as { file: string };
try {
  parentPort?.postMessage({ doc: readConfigDocument(file) });
} catch (err) {
  parentPort?.postMessage({ message: (err as Error).message });
}

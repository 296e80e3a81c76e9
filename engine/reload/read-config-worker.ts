/**
 * The worker of read-config.ts: parse one config file's text, answer the
 * document or the error's message (never a stack).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { parseConfigDocument } from '../config-document.ts';

const { file, text } = workerData as { file: string; text: string };
try {
  parentPort?.postMessage({ doc: parseConfigDocument(file, text) });
} catch (err) {
  parentPort?.postMessage({ message: (err as Error).message });
}

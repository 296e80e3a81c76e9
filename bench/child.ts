/**
 * The parent's handle on a benchmark server running in its own process:
 * fork it, wait for its URL, sample its counters, and SIGKILL it (no
 * graceful shutdown, so the durability check sees only what was committed).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildMessage, ServerSample } from './server.ts';
import type { ServerSpec } from './targets.ts';

const SERVER_MODULE = fileURLToPath(new URL('./server.ts', import.meta.url));
const START_TIMEOUT_MS = 15_000;

/** A server child process. */
export type ServerProcess = {
  url: string;
  /** The server process's counters now (CPU time, store commits). */
  sample(): Promise<ServerSample>;
  /** SIGKILL the process and wait for it to exit. */
  kill(): Promise<void>;
};

/** Fork bench/server.ts for `spec` and resolve once it listens. */
export async function startServerProcess(spec: ServerSpec): Promise<ServerProcess> {
  const child = fork(SERVER_MODULE, [JSON.stringify(spec)], {
    execArgv: [],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const url = await waitForReady(child);
  return {
    url,
    sample: () => askSample(child),
    kill: () => killChild(child),
  };
}

function waitForReady(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => fail(new Error('server did not start in time')),
      START_TIMEOUT_MS,
    );
    const onExit = (code: number | null) => fail(new Error(`server exited with ${code}`));
    const onMessage = (message: ChildMessage) => {
      if (message.type !== 'ready') return;
      cleanup();
      resolve(message.url);
    };
    function cleanup() {
      clearTimeout(timer);
      child.off('exit', onExit);
      child.off('message', onMessage);
    }
    function fail(err: Error) {
      cleanup();
      child.kill('SIGKILL');
      reject(err);
    }
    child.on('exit', onExit);
    child.on('message', onMessage);
  });
}

function askSample(child: ChildProcess): Promise<ServerSample> {
  return new Promise((resolve) => {
    const onMessage = (message: ChildMessage) => {
      if (message.type !== 'sample') return;
      child.off('message', onMessage);
      resolve(message.sample);
    };
    child.on('message', onMessage);
    child.send('sample');
  });
}

function killChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/**
 * The parent's handle on a benchmark server running in its own process:
 * fork it, wait for its URL, sample its counters, and SIGKILL it (no
 * graceful shutdown, so the durability check sees only what was committed).
 * When profiling, the server is asked to exit instead, so V8 writes its
 * CPU profile.
 */
import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildMessage, ServerSample } from './server.ts';
import type { ServerSpec } from './targets.ts';

const SERVER_MODULE = fileURLToPath(new URL('./server.ts', import.meta.url));
const START_TIMEOUT_MS = 15_000;

/** A server child process. */
export type ServerProcess = {
  url: string;
  pid: number;
  /** The server process's counters now (CPU time, store commits). */
  sample(): Promise<ServerSample>;
  /** SIGKILL the process and wait for it to exit. */
  kill(): Promise<void>;
  /** Ask the process to exit (profiles get written); SIGKILL if it has not after a while. */
  stop(): Promise<void>;
};

const STOP_TIMEOUT_MS = 10_000;

/**
 * Fork bench/server.ts for `spec` and resolve once it listens. With
 * `cpuProfDir`, the server and the processes it starts write CPU profiles there.
 */
export async function startServerProcess(
  spec: ServerSpec,
  cpuProfDir?: string | null,
): Promise<ServerProcess> {
  // NODE_OPTIONS rather than execArgv: the transform process the server forks inherits it.
  const env = cpuProfDir
    ? {
        ...process.env,
        NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --cpu-prof --cpu-prof-dir=${path.resolve(cpuProfDir)}`,
      }
    : process.env;
  const child = fork(SERVER_MODULE, [JSON.stringify(spec)], {
    execArgv: [],
    env,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const url = await waitForReady(child);
  return {
    url,
    pid: child.pid ?? 0,
    sample: () => askSample(child),
    kill: () => killChild(child),
    stop: () => stopChild(child),
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

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.send('exit');
  });
}

function killChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

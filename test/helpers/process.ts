/**
 * Test helpers for end-to-end tests of the real `server.ts` process: spawn it
 * with the pinned Node 24 binary, capture its output, find the port it
 * printed, run one-shot commands, and make sure no child outlives a test.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach } from 'vitest';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const NODE = path.join(ROOT, 'node_modules/.bin/node');
export const SERVER = path.join(ROOT, 'server.ts');

/** The line `serve` prints once it listens; group 1 is the base URL. */
export const LISTENING = /hookgate listening on (http:\/\/127\.0\.0\.1:(\d+))/;

export type Exit = { code: number | null; signal: NodeJS.Signals | null };

export type SpawnOptions = {
  cwd?: string;
  /** Merged over the parent environment; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  /** Read nothing from stdout for this long, like a slow consumer at the end of a pipe. */
  slowReaderMs?: number;
};

export type HookgateProcess = {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves when the process has exited and its output is fully read. */
  exited: Promise<Exit>;
  /** Wait until stdout matches, rejecting on exit or timeout. */
  waitForStdout(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Wait for the exit, killing the process (SIGKILL) if it takes longer than timeoutMs. */
  waitForExit(timeoutMs?: number): Promise<Exit>;
};

export type RunningServer = HookgateProcess & {
  /** Base URL, e.g. http://127.0.0.1:40123 */
  url: string;
  port: number;
};

const live = new Set<ChildProcess>();

/** Spawn `node server.ts ...args`. HOOKGATE_CONFIG and HOOKGATE_TOKEN are unset unless given. */
export function spawnHookgate(args: string[], options: SpawnOptions = {}): HookgateProcess {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env['HOOKGATE_CONFIG'];
  delete env['HOOKGATE_TOKEN'];
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  const child = spawn(NODE, [SERVER, ...args], {
    cwd: options.cwd ?? ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let out = '';
  let err = '';
  const watchers = new Set<() => void>();
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    for (const watch of watchers) watch();
  });
  if (options.slowReaderMs) {
    child.stdout?.pause();
    setTimeout(() => child.stdout?.resume(), options.slowReaderMs);
  }
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<Exit>((resolve) => {
    child.on('close', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
      for (const watch of watchers) watch();
    });
  });
  let hasExited = false;
  exited.then(() => {
    hasExited = true;
  });

  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForStdout(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          watchers.delete(check);
          reject(new Error(`timed out waiting for ${pattern}\nstdout: ${out}\nstderr: ${err}`));
        }, timeoutMs);
        function check() {
          const match = out.match(pattern);
          if (match) {
            clearTimeout(timer);
            watchers.delete(check);
            resolve(match);
          } else if (hasExited || child.exitCode !== null || child.signalCode !== null) {
            clearTimeout(timer);
            watchers.delete(check);
            reject(new Error(`process exited before ${pattern}\nstdout: ${out}\nstderr: ${err}`));
          }
        }
        watchers.add(check);
        check();
      });
    },
    async waitForExit(timeoutMs = 30_000) {
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** Spawn `serve ...args` and resolve once it printed its listening line. */
export async function startServer(
  args: string[],
  options: SpawnOptions = {},
): Promise<RunningServer> {
  const proc = spawnHookgate(['serve', ...args], options);
  try {
    const match = await proc.waitForStdout(LISTENING);
    return { ...proc, url: match[1] as string, port: Number(match[2]) };
  } catch (err) {
    proc.child.kill('SIGKILL');
    throw err;
  }
}

/** Run a command to completion (killed after timeoutMs). */
export async function runHookgate(
  args: string[],
  options: SpawnOptions & { timeoutMs?: number } = {},
): Promise<Exit & { stdout: string; stderr: string }> {
  const proc = spawnHookgate(args, options);
  const exit = await proc.waitForExit(options.timeoutMs ?? 30_000);
  return { ...exit, stdout: proc.stdout(), stderr: proc.stderr() };
}

/** The actions `actions --json` prints, newest first. */
export async function listStoredActions(
  args: string[],
  options: SpawnOptions = {},
): Promise<Array<Record<string, unknown>>> {
  const result = await runHookgate(['actions', '--json', ...args], options);
  if (result.code !== 0) {
    throw new Error(`actions exited ${result.code} ${result.signal}: ${result.stderr}`);
  }
  return result.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** SIGKILL every child still running and wait for them; for afterEach/afterAll. */
export async function killAll(): Promise<void> {
  const children = [...live];
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) {
            live.delete(child);
            resolve();
            return;
          }
          const timer = setTimeout(resolve, 5_000);
          child.once('close', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGKILL');
        }),
    ),
  );
}

/** A fresh temporary directory and its cleanup. */
export function tempDir(prefix = 'hookgate-e2e-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Write a config file into dir and return its path. */
export function writeConfig(dir: string, text: string, name = 'hookgate.yaml'): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

/** POST a JSON body (or a raw string) to `<url>/hooks/<name>` with a bearer token. */
export function postHook(
  url: string,
  name: string,
  body: unknown,
  options: { token?: string; headers?: Record<string, string>; hooksPath?: string } = {},
): Promise<Response> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...options.headers,
  };
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
  return fetch(`${url}${options.hooksPath ?? '/hooks'}/${name}`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
}

/**
 * For a test file that spawns servers: kills them after each test, and
 * returns a maker of temporary directories removed after the file.
 */
export function useProcessFixtures(): () => string {
  const temps: Array<() => void> = [];
  afterEach(async () => {
    await killAll();
  });
  afterAll(() => {
    for (const cleanup of temps.splice(0)) cleanup();
  });
  return function temp() {
    const { dir, cleanup } = tempDir();
    temps.push(cleanup);
    return dir;
  };
}

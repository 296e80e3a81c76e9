/**
 * The command runner's watchdog: when the hookgate instance that started a
 * runner is SIGKILLed, the runner and its children end with it instead of
 * running beside the retry of the same turn on another instance; a runner
 * started the way it was before (own process group only) lives on. And the
 * watchdog changes nothing the runner sees: stdin, stdout, environment,
 * cwd, open descriptors, exit codes and signals, start failures.
 */
import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createCommandRunner } from '../engine/runtime/runners/command.ts';
import type { RunRequest } from '../engine/runtime/runners/runner.ts';
import { tempDir } from './helpers/hookgate.ts';
import { ROOT } from './helpers/process.ts';
import {
  groupMembers,
  isRunning,
  NODE,
  processes,
  processStat as stat,
  waitFor,
} from './helpers/runtime.ts';

const HOST = path.join(ROOT, 'test/fixtures/runner-host.ts');

const RUN: RunRequest = {
  kind: 'agent',
  runId: 'run-7',
  agentId: 'ops',
  sessionKey: 'hook:w-1',
  message: 'What changed?',
  model: null,
  thinking: null,
  timeoutSeconds: 20,
  history: [{ role: 'user', text: 'Earlier question' }],
};

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function workDir(): string {
  const { dir, cleanup } = tempDir('hookgate-watchdog-');
  cleanups.push(cleanup);
  return realpathSync(dir);
}

function script(dir: string, name: string, body: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

function killGroupLater(pgid: number): void {
  cleanups.push(() => {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  });
}

/** "<runner pid> <grandchild pid>", once the runner has written it. */
function recordedPids(file: string): [number, number] | undefined {
  if (!existsSync(file)) return undefined;
  const [runner, grandchild] = readFileSync(file, 'utf8').trim().split(' ').map(Number);
  return runner && grandchild ? [runner, grandchild] : undefined;
}

describe('a killed instance', () => {
  it('takes its runner and the runner’s children with it; without the watchdog they live on', async () => {
    const dir = workDir();
    // A runner that ignores polite signals, starts a child, signals its group, closes its output and waits.
    const runner = script(
      dir,
      'runner.sh',
      [
        "trap '' HUP INT TERM",
        'sleep 60 &',
        // Ends its group politely, as `trap "kill 0" EXIT` does: only the polite die.
        'kill -s TERM 0; kill -s HUP 0',
        'echo "$$ $!" > "$RECORD.tmp" && mv "$RECORD.tmp" "$RECORD"',
        'exec 0<&- 1>&- 2>&-',
        'wait',
      ].join('\n'),
    );
    const watched = path.join(dir, 'watched');
    const control = path.join(dir, 'control');
    const host = spawn(NODE, [HOST, runner, watched, control], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let hostErrors = '';
    host.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      hostErrors += chunk;
    });
    cleanups.push(() => host.kill('SIGKILL'));
    const [watchedPid, watchedChild] = await waitFor(
      `the watched runner to start ${hostErrors}`,
      () => recordedPids(watched),
    );
    const [controlPid, controlChild] = await waitFor('the control runner to start', () =>
      recordedPids(control),
    );
    killGroupLater(watchedPid);
    killGroupLater(controlPid);
    expect([isRunning(watchedPid), isRunning(watchedChild)]).toEqual([true, true]);

    host.kill('SIGKILL');
    await waitFor(
      'the watched runner and its child to be gone',
      () => !isRunning(watchedPid) && !isRunning(watchedChild),
      10_000,
    );
    // Started the same way minus the watchdog, by the same dead instance: still running.
    expect([isRunning(controlPid), isRunning(controlChild)]).toEqual([true, true]);
  });
});

describe('a run asked for once shutdown began', () => {
  it('starts no process: a signal already aborted is an interrupted run, to be retried', async () => {
    const dir = workDir();
    const marker = path.join(dir, 'ran');
    writeFileSync(path.join(dir, 'mark.sh'), `#!/bin/sh\ntouch ${JSON.stringify(marker)}\n`);
    chmodSync(path.join(dir, 'mark.sh'), 0o755);
    const controller = new AbortController();
    controller.abort();
    const spawned: number[] = [];
    const result = await createCommandRunner({ argv: ['./mark.sh'], cwd: dir }).run(RUN, {
      signal: controller.signal,
      onSpawn: (pgid) => spawned.push(pgid),
    });
    expect(result).toEqual({ status: 'retry', reason: 'interrupted by shutdown' });
    expect(spawned).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });
});

describe('what the runner sees is unchanged', () => {
  it('stdin is the run as one JSON line; the trimmed stdout is the reply', async () => {
    const dir = workDir();
    const result = await createCommandRunner({ argv: ['cat'], cwd: dir }).run(RUN);
    expect(result.status).toBe('ok');
    expect(JSON.parse((result as { reply: string }).reply)).toEqual(RUN);
  });

  it('the bounded environment exactly (no PWD added by a shell), and a configured PWD as given', async () => {
    const dir = workDir();
    const names = async (env?: Record<string, string>) => {
      const result = await createCommandRunner({
        argv: ['/usr/bin/env'],
        cwd: dir,
        ...(env && { env }),
      }).run(RUN);
      const lines = (result as { reply: string }).reply.split('\n');
      return Object.fromEntries(lines.map((line) => line.split(/=(.*)/s).slice(0, 2)));
    };
    const plain = await names({ EXTRA: 'x y' });
    expect(plain).not.toHaveProperty('PWD');
    expect(plain).toMatchObject({
      EXTRA: 'x y',
      HOOKGATE_RUN_ID: 'run-7',
      HOOKGATE_AGENT_ID: 'ops',
    });
    const allowed = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'EXTRA', 'HOOKGATE_RUN_ID'];
    expect(Object.keys(plain).sort()).toEqual(
      Object.keys(plain)
        .filter((name) => [...allowed, 'HOOKGATE_AGENT_ID'].includes(name))
        .sort(),
    );
    expect(await names({ PWD: '/configured' })).toMatchObject({ PWD: '/configured' });
  });

  it('the working directory, argv, and no descriptor beyond stdin, stdout and stderr', async () => {
    const dir = workDir();
    script(
      dir,
      'look.sh',
      [
        'pwd',
        'echo "$0|$1|$2"',
        'for fd in /proc/$$/fd/*; do echo "fd ${fd##*/} $(readlink "$fd")"; done',
      ].join('\n'),
    );
    const result = await createCommandRunner({ argv: ['./look.sh', 'a b', ''], cwd: dir }).run(RUN);
    const [cwd, argv, ...fds] = (result as { reply: string }).reply.split('\n');
    expect(cwd).toBe(dir);
    expect(argv).toBe('./look.sh|a b|');
    // hookgate's end of the watchdog's socket pair never reaches the runner, nor does the watchdog's.
    const sockets = fds
      .filter((line) => line.includes('socket:'))
      .map((line) => line.split(' ')[1]);
    expect(sockets).toEqual(['0', '1', '2']);
  });

  it('no child of its own: a runner that waits for all its children is not held up by the watchdog', async () => {
    const dir = workDir();
    const runner = script(dir, 'alone.sh', 'exec sleep 30');
    let pid = 0;
    const controller = new AbortController();
    const pending = createCommandRunner({ argv: [runner], cwd: dir }).run(RUN, {
      signal: controller.signal,
      onSpawn: (spawned) => {
        pid = spawned;
      },
    });
    await waitFor("the runner to be exec'd", () => pid > 0 && stat(pid)?.comm === 'sleep');
    const children = processes().filter((other) => stat(other)?.ppid === pid);
    const watchdogs = groupMembers(pid).filter((other) => other !== pid);
    controller.abort();
    await pending;
    expect(children).toEqual([]);
    // It is there all the same, in the runner's group.
    expect(watchdogs).toHaveLength(1);
  });

  it.each([
    ['an exit code', 'echo broke >&2; exit 3', 'exit 3: broke'],
    ['a signal', 'kill -s TERM $$', 'exit SIGTERM'],
  ])('%s', async (_name, body, reason) => {
    const dir = workDir();
    const runner = script(dir, 'fails.sh', body);
    expect(await createCommandRunner({ argv: [runner], cwd: dir }).run(RUN)).toEqual({
      status: 'error',
      reason,
    });
  });

  it('a timeout still ends the whole group, watchdog included', async () => {
    const dir = workDir();
    const runner = script(dir, 'sleeper.sh', 'sleep 30 &\nexec sleep 31');
    let pgid = 0;
    const result = await createCommandRunner({ argv: [runner], cwd: dir }).run(
      { ...RUN, timeoutSeconds: 1 },
      {
        onSpawn: (pid) => {
          pgid = pid;
        },
      },
    );
    expect(result).toEqual({ status: 'timeout', reason: 'no reply within 1s' });
    await waitFor('the timed-out group to be gone', () => groupMembers(pgid).length === 0);
  });
});

describe('a runner that cannot start is retried (the work did not happen)', () => {
  it.each([
    ['a missing file', () => ({ argv: ['/nonexistent/agent'] }), 'no such file'],
    ['a name not in PATH', () => ({ argv: ['hookgate-no-such-agent'] }), 'not found in PATH'],
    [
      'a file without the execute bit',
      (dir: string) => {
        writeFileSync(path.join(dir, 'plain.sh'), 'echo hi\n');
        return { argv: ['./plain.sh'] };
      },
      'not executable',
    ],
    [
      'a directory',
      (dir: string) => {
        mkdirSync(path.join(dir, 'folder'));
        return { argv: ['./folder'] };
      },
      'not executable',
    ],
  ])('%s', async (_name, setup, problem) => {
    const dir = workDir();
    const { argv } = setup(dir);
    expect(await createCommandRunner({ argv, cwd: dir }).run(RUN)).toEqual({
      status: 'retry',
      reason: `cannot run ${argv[0]}: ${problem}`,
    });
  });

  it('a name found in the PATH of the runner’s environment runs', async () => {
    const dir = workDir();
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    script(bin, 'my-agent', 'echo found');
    const runner = createCommandRunner({
      argv: ['my-agent'],
      cwd: dir,
      env: { PATH: `${bin}:/usr/bin:/bin` },
    });
    expect(await runner.run(RUN)).toEqual({ status: 'ok', reply: 'found' });
  });
});

describe('a finished run', () => {
  it('leaves the children that let go of its output running, as before (the watchdog leaves quietly)', async () => {
    const dir = workDir();
    const record = path.join(dir, 'left');
    const runner = script(
      dir,
      'leaves.sh',
      'sleep 60 </dev/null >/dev/null 2>&1 &\necho $! > "$RECORD"\necho done',
    );
    const result = await createCommandRunner({
      argv: [runner],
      cwd: dir,
      env: { RECORD: record },
    }).run(RUN);
    expect(result).toEqual({ status: 'ok', reply: 'done' });
    const leftover = Number(readFileSync(record, 'utf8'));
    cleanups.push(() => process.kill(leftover, 'SIGKILL'));
    // The watchdog has had its line and gone; a kill would have come at once.
    await waitFor(
      'the watchdog to leave',
      () => !groupMembers(stat(leftover)?.pgid ?? leftover).some((pid) => pid !== leftover),
    );
    expect(isRunning(leftover)).toBe(true);
  });
});

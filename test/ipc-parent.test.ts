/**
 * hookgate started by a parent with an IPC channel of its own (a process
 * manager in fork mode, an embedding gateway's `fork`): the boot message
 * meant for hookgate's own launcher must not reach it, nor its channel be
 * dropped, which would break the parent's own messages (pm2's ready and
 * shutdown). Only the launcher, which marks its child's environment, is told.
 */
import { fork } from 'node:child_process';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from './helpers/hookgate.ts';
import { LISTENING, NODE, ROOT } from './helpers/process.ts';
import { waitFor } from './helpers/runtime.ts';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe('a parent with an IPC channel of its own', () => {
  it('gets no message from hookgate, and its channel stays connected', async () => {
    const temp = tempDir('hookgate-ipc-');
    cleanups.push(temp.cleanup);
    const { HOOKGATE_LAUNCHER: _launcher, ...env } = process.env;
    const child = fork(
      path.join(ROOT, 'server.ts'),
      ['serve', '--port', '0', '--data-dir', temp.dir],
      {
        execPath: realpathSync(NODE),
        cwd: temp.dir,
        env: { ...env, HOOKGATE_TOKEN: 'ipc-parent-token-0123456789' },
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      },
    );
    cleanups.push(() => child.kill('SIGKILL'));
    const messages: unknown[] = [];
    child.on('message', (message) => messages.push(message));
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    await waitFor('the listening line', () => LISTENING.test(out), 30_000);
    expect(child.connected).toBe(true);
    // The channel is still open for the parent's own messages (send throws on a closed one).
    child.send('ping');
    expect(messages).toEqual([]);
    expect(child.connected).toBe(true);
  });
});

/**
 * Attack by a transform process (one a transform escaped into) on the server's event loop: log
 * messages padded with whitespace to near the frame cap (which is sized for the largest honest
 * result). Each was valid JSON and a valid log line, within the log budget, and cost the server
 * about 10 ms to scan and parse: over a thousand a minute, a quarter of a core and a 10 ms stall
 * each. A message other than a result longer than an honest one of its type is now a lie: the
 * process is killed and replaced at the first.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { HookError } from '../engine/errors.ts';
import { createLogger } from '../engine/log.ts';
import { checkMessage } from '../engine/sandbox/message-check.ts';
import { MESSAGE_CHARS, MAX_REPORTED_FILES, PATH_CHARS } from '../engine/sandbox/protocol.ts';
import { createSupervisor } from '../engine/sandbox/supervisor.ts';
import { tempDir } from './helpers/hookgate.ts';
import { SANDBOX_SETTINGS } from './helpers/sandbox-settings.ts';

const CHILD = fileURLToPath(new URL('./fixtures/sandbox/padded-log.mjs', import.meta.url));
const temp = tempDir();
afterAll(() => temp.cleanup());

it('a process sending padded log messages is replaced', async () => {
  const supervisor = createSupervisor(
    [{ key: 'm', mappingId: 'm', root: temp.dir, file: path.join(temp.dir, 'm.js') }],
    SANDBOX_SETTINGS,
    createLogger('silent'),
    { entry: CHILD },
  );
  const pidOf = async () => {
    const answer = await supervisor.call('m', {}).catch((err: HookError) => err.code);
    return typeof answer === 'string' ? answer : (answer.value as { message: string }).message;
  };
  try {
    await supervisor.start();
    const first = await pidOf();
    let later = first;
    for (let i = 0; i < 50 && later === first; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      later = await pidOf();
    }
    expect(later).not.toBe(first);
  } finally {
    await supervisor.close();
  }
}, 60_000);

describe('honest messages at their longest still pass', () => {
  // Every character escaped by JSON.stringify: the longest text a string of the cap becomes.
  const escaped = (n: number) => '\u0001'.repeat(n);
  const caps = { maxOutputBytes: 262_144, maxModules: 3 };
  it.each([
    [
      'log',
      { type: 'log', key: escaped(MESSAGE_CHARS), level: 'warn', message: escaped(MESSAGE_CHARS) },
    ],
    ['loading', { type: 'loading', key: escaped(MESSAGE_CHARS) }],
    ['rebuilding', { type: 'rebuilding' }],
    [
      'loaded',
      {
        type: 'loaded',
        errors: Array.from({ length: 3 }, () => ({
          key: escaped(MESSAGE_CHARS),
          message: escaped(MESSAGE_CHARS),
        })),
      },
    ],
    [
      'compiled',
      {
        type: 'compiled',
        key: escaped(MESSAGE_CHARS),
        files: Array.from({ length: MAX_REPORTED_FILES }, () => ({
          file: escaped(PATH_CHARS),
          signature: escaped(PATH_CHARS),
        })),
      },
    ],
  ])('%s', (_type, message) => {
    expect(checkMessage(JSON.stringify(message), caps).ok).toBe(true);
  });

  it('the same log line padded past that is refused', () => {
    const text = `{"type":"log","key":"m","level":"info","message":"x"${' '.repeat(30_000)}}`;
    expect(checkMessage(text, caps).ok).toBe(false);
  });
});

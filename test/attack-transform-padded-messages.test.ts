import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { checkMessage } from '../engine/sandbox/message-check.ts';
import { MESSAGE_CHARS, MAX_REPORTED_FILES, PATH_CHARS } from '../engine/sandbox/protocol.ts';
import { tempDir } from './helpers/hookgate.ts';
import { expectChildReplaced } from './helpers/hostile-child.ts';

const CHILD = fileURLToPath(new URL('./fixtures/sandbox/padded-log.mjs', import.meta.url));
const temp = tempDir();
afterAll(() => temp.cleanup());

it('a process sending padded log messages is replaced', async () => {
  await expectChildReplaced(CHILD, temp.dir);
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

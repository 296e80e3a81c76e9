/**
 * Attack: a transform output of multi-byte characters (CJK, emoji). `maxOutputBytes` counted
 * the UTF-16 units of the output's JSON text, not its bytes, so an output of three-byte
 * characters passed at up to three times the limit in bytes, as the setting, its error and
 * the README put it. The limit is now UTF-8 bytes: in the transform process (out of the
 * transform's reach), and again on the server for what a process sends. The frame cap derived
 * from the limit still holds every honest answer.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { encodeFrame } from '../engine/sandbox/frames.ts';
import {
  CONSOLE_LINE_CHARS,
  CONSOLE_LINES_PER_CALL,
  maxFrameBytes,
  type ResultMessage,
} from '../engine/sandbox/protocol.ts';
import { overUtf8Bytes } from '../engine/utf8.ts';
import { postAnswer, QUICK, transformServerFor } from './helpers/transform-server.ts';

const LIMIT = 1024;
// The output's JSON text around the message: {"message":"..."}.
const ENVELOPE = Buffer.byteLength(JSON.stringify({ message: '' }));

/** A message of `count` times `unit`, then ASCII up to `bytes` bytes of output in all. */
const messageOf = (unit: string, count: number, bytes = 0) => {
  const text = unit.repeat(count);
  return text + 'x'.repeat(Math.max(0, bytes - ENVELOPE - Buffer.byteLength(text)));
};

describe('a transform output of multi-byte characters', () => {
  const server = transformServerFor(
    {
      quick: QUICK,
      echo: 'export default ({ payload }) => ({ message: payload.message });\n',
    },
    { maxOutputBytes: LIMIT },
  );

  it.each([
    ['ASCII, exactly the limit', messageOf('', 0, LIMIT)],
    ['two-byte characters, exactly the limit', messageOf('\u00e9', (LIMIT - ENVELOPE) / 2)],
    ['emoji then ASCII, exactly the limit', messageOf('\u{1f600}', 250, LIMIT)],
    ['three-byte characters, under the limit', messageOf('\u4e2d', 330)],
  ])('%s: accepted', async (_name, message) => {
    expect(Buffer.byteLength(JSON.stringify({ message }))).toBeLessThanOrEqual(LIMIT);
    const res = await server().post('echo', { message });
    expect(res.status).toBe(200);
  });

  it.each([
    ['three-byte characters (CJK), 3x the limit in bytes', messageOf('\u4e2d', 1000)],
    ['emoji, 2x the limit in bytes', messageOf('\u{1f600}', 500)],
    ['two-byte characters, one byte over', messageOf('\u00e9', (LIMIT - ENVELOPE) / 2, LIMIT + 1)],
    ['ASCII, one byte over', messageOf('', 0, LIMIT + 1)],
  ])('%s: refused as too large, and the next call works', async (_name, message) => {
    const output = JSON.stringify({ message });
    expect(Buffer.byteLength(output)).toBeGreaterThan(LIMIT);
    const res = await server().post('echo', { message });
    const body = (await res.json()) as { error?: { code?: string; message?: string } };
    expect(res.status).toBe(500);
    expect(body.error?.code).toBe('transform_failed');
    expect(body.error?.message).toMatch(/output that is too large/);
    expect(await postAnswer(server(), 'quick')).toEqual({ status: 200, code: undefined });
  });
});

describe('the byte count and the frame cap', () => {
  const text = fc.string({ unit: 'binary', maxLength: 400 });

  test.prop([text, fc.integer({ min: 0, max: 1300 })])(
    'overUtf8Bytes agrees with the UTF-8 length, lone surrogates included',
    (value, max) => {
      expect(overUtf8Bytes(value, max)).toBe(Buffer.byteLength(value, 'utf8') > max);
    },
  );

  // Characters whose JSON escape or UTF-8 is the longest, and any others.
  const worst = fc.oneof(
    fc
      .array(fc.constantFrom('"', '\\', '\u0001', '\u00e9', '\u4e2d', '\u{1f600}', '\ud800', 'x'), {
        maxLength: LIMIT,
      })
      .map((chars) => chars.join('')),
    fc.string({ unit: 'binary', maxLength: LIMIT }),
  );

  test.prop([worst])(
    'a result with an output within the limit in bytes and the most console a call has fits the frame cap',
    (value) => {
      // The worst console: every line at its cap of characters that each escape to 6 bytes.
      const consoleLines = Array.from({ length: CONSOLE_LINES_PER_CALL }, () => ({
        level: 'error' as const,
        text: '\u0001'.repeat(CONSOLE_LINE_CHARS),
      }));
      // The longest JSON text of the value's head that is within the limit.
      let head = value;
      let output = JSON.stringify(head);
      while (overUtf8Bytes(output, LIMIT)) {
        head = head.slice(0, -1);
        output = JSON.stringify(head);
      }
      const message: ResultMessage = {
        type: 'result',
        id: Number.MAX_SAFE_INTEGER,
        output,
        console: consoleLines,
        droppedLines: 1_000_000,
      };
      expect(encodeFrame(message).length - 4).toBeLessThanOrEqual(maxFrameBytes(LIMIT, 1));
    },
  );
});

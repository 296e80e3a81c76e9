/**
 * A body read ends its time-limit watch however it ends (the whole body, a
 * stream error, the client gone mid-body, too many bytes, the limit itself):
 * a watch left behind would hold its request and every chunk read until the
 * limit ran out, under a flood a limit's worth of bodies in memory.
 */
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readBody } from '../engine/body.ts';
import { createDeadlines } from '../engine/deadlines.ts';
import type { HookError } from '../engine/errors.ts';

/** A request stream as readBody sees one: headers, data events, `complete` once ended. */
function request(): { req: IncomingMessage; stream: PassThrough & { complete: boolean } } {
  const stream = Object.assign(new PassThrough(), { headers: {}, complete: false });
  stream.on('end', () => {
    stream.complete = true;
  });
  return { req: stream as unknown as IncomingMessage, stream };
}

const codeOf = (err: unknown) => (err as HookError).code;

describe('readBody ends its watch', () => {
  it('when the whole body arrived', async () => {
    const deadlines = createDeadlines(60_000);
    const { req, stream } = request();
    const read = readBody(req, { maxBytes: 100, timeoutMs: 60_000 }, deadlines);
    expect(deadlines.size).toBe(1);
    stream.end('{"text":"hi"}');
    expect((await read).toString()).toBe('{"text":"hi"}');
    expect(deadlines.size).toBe(0);
  });

  it.each([
    [
      'the stream failed',
      60_000,
      100,
      (s: PassThrough) => s.destroy(new Error('reset')),
      'invalid_json',
    ],
    [
      'the client closed mid-body',
      60_000,
      100,
      (s: PassThrough) => {
        s.write('{"text":');
        s.destroy();
      },
      'invalid_json',
    ],
    [
      'the body passed its size limit',
      60_000,
      10,
      (s: PassThrough) => s.write('x'.repeat(11)),
      'payload_too_large',
    ],
    ['its time limit ran out', 30, 100, (s: PassThrough) => s.write('{"text":'), 'request_timeout'],
  ] as const)('when %s', async (_when, timeoutMs, maxBytes, end, code) => {
    const deadlines = createDeadlines(timeoutMs);
    const { req, stream } = request();
    const read = readBody(req, { maxBytes, timeoutMs }, deadlines);
    end(stream);
    expect(codeOf(await read.catch((err: unknown) => err))).toBe(code);
    expect(deadlines.size).toBe(0);
  });
});

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

  it('when the stream failed', async () => {
    const deadlines = createDeadlines(60_000);
    const { req, stream } = request();
    const read = readBody(req, { maxBytes: 100, timeoutMs: 60_000 }, deadlines);
    stream.destroy(new Error('reset'));
    expect(codeOf(await read.catch((err: unknown) => err))).toBe('invalid_json');
    expect(deadlines.size).toBe(0);
  });

  it('when the client closed mid-body', async () => {
    const deadlines = createDeadlines(60_000);
    const { req, stream } = request();
    const read = readBody(req, { maxBytes: 100, timeoutMs: 60_000 }, deadlines);
    stream.write('{"text":');
    stream.destroy();
    expect(codeOf(await read.catch((err: unknown) => err))).toBe('invalid_json');
    expect(deadlines.size).toBe(0);
  });

  it('when the body passed its size limit', async () => {
    const deadlines = createDeadlines(60_000);
    const { req, stream } = request();
    const read = readBody(req, { maxBytes: 10, timeoutMs: 60_000 }, deadlines);
    stream.write('x'.repeat(11));
    expect(codeOf(await read.catch((err: unknown) => err))).toBe('payload_too_large');
    expect(deadlines.size).toBe(0);
  });

  it('when its time limit ran out', async () => {
    const deadlines = createDeadlines(30);
    const { req, stream } = request();
    const read = readBody(req, { maxBytes: 100, timeoutMs: 30 }, deadlines);
    stream.write('{"text":');
    expect(codeOf(await read.catch((err: unknown) => err))).toBe('request_timeout');
    expect(deadlines.size).toBe(0);
  });
});

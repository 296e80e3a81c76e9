/**
 * Attack: a transform whose output has an unknown key as long as the output cap allows (a key a
 * module built from payload text, say). The refusal names the key, and named all of it: the
 * answer to the sender grew to the size of the output (256 KB by default). The key is cut short;
 * the refusal is still transform_invalid_output, and the server keeps answering.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestServer, tempDir } from './helpers/hookgate.ts';
import { QUICK, startWithTransforms } from './helpers/transform-server.ts';

describe('a transform output with a huge unknown key', () => {
  const temp = tempDir();
  let server: TestServer;

  beforeAll(async () => {
    server = await startWithTransforms(
      temp.dir,
      {
        quick: QUICK,
        'long-key': `export default ({ payload }) =>
          ({ message: 'x', [payload.unit.repeat(payload.count)]: 1 });`,
      },
      {},
    );
  });
  afterAll(async () => {
    await server.stop();
    temp.cleanup();
  });

  it.each([
    ['letters', 'k', 200_000],
    ['lone surrogates', '\ud800', 30_000],
    ['line breaks', '\n', 30_000],
  ])('a key of %s is named in a bounded refusal', async (_name, unit, count) => {
    const res = await server.post('long-key', { unit, count });
    const text = await res.text();
    expect(res.status).toBe(500);
    expect((JSON.parse(text) as { error: { code: string } }).error.code).toBe(
      'transform_invalid_output',
    );
    expect(Buffer.byteLength(text)).toBeLessThan(1024);
    expect((await server.post('quick', {})).status).toBe(200);
  });
});

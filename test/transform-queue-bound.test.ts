/**
 * A flood of transform requests cannot pile up in the server: calls waiting
 * for a transform process are bounded (hooks.transforms.maxWaitingCalls),
 * and one past the bound is refused at once with 503 and Retry-After.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hookgate } from '../engine/hookgate.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { NEVER_SETTLES, startWithTransforms } from './helpers/transform-server.ts';

type Answer = { status: number; retryAfter: string | null; body: { error?: { code: string } } };

/** The status, Retry-After and JSON body of an answer. */
async function readAnswer(res: Response): Promise<Answer> {
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: (await res.json()) as { error?: { code: string } },
  };
}

/** Resolves with the first `count` answers of `flood` that were 503. */
function firstRefusals(flood: Array<Promise<Answer | undefined>>, count: number) {
  return new Promise<Answer[]>((resolve) => {
    const seen: Answer[] = [];
    for (const request of flood)
      void request.then((result) => {
        if (result?.status === 503) seen.push(result);
        if (seen.length === count) resolve(seen);
      });
  });
}

describe('transform call queue bound', () => {
  const temp = tempDir();
  let hookgate: Hookgate;
  const post = (hook: string) =>
    fetch(`${hookgate.url}/hooks/${hook}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: '{}',
    }).then(readAnswer);

  beforeAll(async () => {
    hookgate = await startWithTransforms(
      temp.dir,
      { never: NEVER_SETTLES },
      { processes: 1, deadlineMs: 5000, maxWaitingCalls: 2 },
    );
  });
  afterAll(async () => {
    await hookgate.close();
    temp.cleanup();
  });

  it('a flood of transform requests past the waiting bound is refused with 503, not queued without bound', async () => {
    // One process holds 32 calls; 2 more may wait; the rest are refused at once.
    const flood = Array.from({ length: 40 }, () => post('never').catch(() => undefined));
    const refused = await firstRefusals(flood, 6);
    expect(refused).toHaveLength(6);
    for (const result of refused) {
      expect(result.body.error?.code).toBe('unavailable');
      expect(result.retryAfter).toBe('1');
    }
  });
});

/**
 * A server whose transform never answers and whose waiting calls may hold 1 MiB in all; `flood`
 * sends `count` requests of `body` at once and resolves with the first `refusals` 503 answers.
 */
function bytesBoundServer(body: string) {
  const temp = tempDir();
  let hookgate: Hookgate;
  const post = () =>
    fetch(`${hookgate.url}/hooks/never`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body,
    }).then(readAnswer);
  beforeAll(async () => {
    hookgate = await startWithTransforms(
      temp.dir,
      { never: NEVER_SETTLES },
      { processes: 1, cpuTimeoutMs: 5000, deadlineMs: 5000, maxWaitingBytes: 1_048_576 },
    );
  });
  afterAll(async () => {
    await hookgate.close();
    temp.cleanup();
  });
  return (count: number, refusals: number) =>
    firstRefusals(
      Array.from({ length: count }, () => post().catch(() => undefined)),
      refusals,
    );
}

describe('transform call bytes bound', () => {
  // ~200 KB of `{}`: the shape that parses to the most objects per byte.
  const flood = bytesBoundServer(JSON.stringify({ a: Array(66_000).fill({}) }));

  it('a flood of large-bodied transform requests is refused with 503 past maxWaitingBytes, far below maxWaitingCalls', async () => {
    // 1 MiB holds two 200 KB requests (input and raw body: more get through only as earlier
    // ones end); the count bound alone (256 waiting + 32 sent) would hold all 12.
    for (const result of await flood(12, 5)) {
      expect(result.body.error?.code).toBe('unavailable');
      expect(result.retryAfter).toBe('1');
    }
  });
});

describe('transform call bytes bound, raw bodies', () => {
  // ~200 KB of whitespace around a small object: the call's input is a few bytes, the raw body
  // the request holds while it waits is not.
  const flood = bytesBoundServer(`{"a":1}${' '.repeat(200_000)}`);

  it('a flood of requests with large raw bodies and small transform inputs is refused with 503 past maxWaitingBytes', async () => {
    // 1 MiB holds five 200 KB raw bodies; counting only the inputs it would hold all 12.
    for (const result of await flood(12, 5)) expect(result.body.error?.code).toBe('unavailable');
  });
});

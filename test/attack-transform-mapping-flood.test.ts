/**
 * One mapping's flood of slow transform calls cannot hold up another mapping's calls: the calls
 * a transform process holds run by mapping in turn, the calls waiting in the server go to the
 * processes by mapping in turn, and at the waiting bound a call of a mapping that holds less
 * takes the place of the flooding mapping's newest waiting call (refused with 503 instead).
 */
import { describe, expect, it } from 'vitest';
import { type Answer, postAnswer, QUICK, transformServerFor } from './helpers/transform-server.ts';

// Each call keeps the isolate busy for 150 ms: a payload that is slow to transform.
const SLOW =
  'export default () => { const end = Date.now() + 150; while (Date.now() < end); return { message: "slow" }; };\n';

/** Send `count` requests to `hook` at once; each settles with its answer and when it came. */
function flood(count: number, send: () => Promise<Answer>) {
  const order: Answer[] = [];
  const all = Array.from({ length: count }, () =>
    send().then((answer) => {
      order.push(answer);
      return answer;
    }),
  );
  return { all, order };
}

describe('a flood of one mapping’s slow transform calls', () => {
  const server = transformServerFor(
    { slow: SLOW, quick: QUICK },
    { processes: 1, cpuTimeoutMs: 2000, deadlineMs: 5000, maxWaitingCalls: 8 },
  );

  it('another mapping’s call sent to the process behind 20 of them runs next, not after them', async () => {
    const slow = flood(20, () => postAnswer(server(), 'slow'));
    // Once one is answered, all 20 are in the process (it holds 32), the rest waiting behind it.
    await Promise.race(slow.all);
    const quick = await postAnswer(server(), 'quick');
    const answeredBefore = slow.order.length;
    const all = await Promise.all(slow.all);
    expect(quick).toEqual({ status: 200, code: undefined });
    expect(all.every((answer) => answer.status === 200)).toBe(true);
    // In order it would have come after all 20 (3 s); in turn, after the one running and the next.
    expect(answeredBefore).toBeLessThanOrEqual(8);
  }, 30_000);

  it('at the waiting bound, another mapping’s call takes the place of the flood’s newest and is answered', async () => {
    // 32 in the process and 8 waiting; the other 10 are refused at once.
    const slow = flood(50, () => postAnswer(server(), 'slow'));
    await expect
      .poll(() => slow.order.filter((answer) => answer.status === 503).length, { timeout: 15_000 })
      .toBe(10);
    const quick = await postAnswer(server(), 'quick');
    const answeredBefore = slow.order.filter((answer) => answer.status === 200).length;
    const all = await Promise.all(slow.all);
    expect(quick).toEqual({ status: 200, code: undefined });
    // The flood's newest waiting call gave way: 11 refused, each with the stable code.
    const refused = all.filter((answer) => answer.status === 503);
    expect(refused).toHaveLength(11);
    expect(refused.every((answer) => answer.code === 'unavailable')).toBe(true);
    expect(all.filter((answer) => answer.status === 200)).toHaveLength(39);
    expect(answeredBefore).toBeLessThanOrEqual(8);
  }, 60_000);

  it('calls of the same mapping past the bound are refused as before, none displaced', async () => {
    const slow = flood(44, () => postAnswer(server(), 'slow'));
    const all = await Promise.all(slow.all);
    expect(all.filter((answer) => answer.status === 503)).toHaveLength(4);
    expect(all.filter((answer) => answer.status === 200)).toHaveLength(40);
  }, 60_000);
});

/**
 * One mapping's flood of slow transform calls cannot hold up another mapping's calls: the calls
 * a transform process holds run by mapping in turn, the calls waiting in the server go to the
 * processes by mapping in turn, and at the waiting bound a call of a mapping that holds less
 * takes the place of the flooding mapping's newest waiting call (refused with 503 instead).
 */
import { describe, expect, it } from 'vitest';
import { type Answer, postAnswer, QUICK, transformServerFor } from './helpers/transform-server.ts';

/** A transform that keeps the isolate busy for `ms`: a payload that is slow to transform. */
const busyFor = (ms: number) =>
  `export default () => { const end = Date.now() + ${ms}; while (Date.now() < end); return { message: "busy" }; };\n`;

/** Send `count` requests at once with `send`; `order` lists the answers as they come. */
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
  // `hold` keeps the one process busy for 2 s while the flood piles up behind it: nothing is
  // answered meanwhile, so what waits and what is refused does not depend on timing.
  const server = transformServerFor(
    { slow: busyFor(150), hold: busyFor(2_000), quick: QUICK },
    { processes: 1, cpuTimeoutMs: 4000, deadlineMs: 5000, maxWaitingCalls: 8 },
  );
  const post = (hook: string) => postAnswer(server(), hook);

  it('another mapping’s call sent to the process behind 20 of them runs next, not after them', async () => {
    const slow = flood(20, () => post('slow'));
    // Once one is answered, all 20 are in the process (it holds 32), the rest waiting behind it.
    await Promise.race(slow.all);
    const quick = await post('quick');
    const answeredBefore = slow.order.length;
    const all = await Promise.all(slow.all);
    expect(quick).toEqual({ status: 200, code: undefined });
    expect(all.every((answer) => answer.status === 200)).toBe(true);
    // In order it would have come after all 20 (3 s); in turn, after the one running and the next.
    expect(answeredBefore).toBeLessThanOrEqual(8);
  }, 30_000);

  it('at the waiting bound, another mapping’s call takes the place of the flood’s newest and is answered', async () => {
    const held = post('hold');
    // The process holds 32 calls and 8 more may wait: past those the flood is refused at once.
    const slow = flood(50, () => post('slow'));
    const refusedAtOnce = () => slow.order.filter((answer) => answer.status === 503).length;
    await expect.poll(refusedAtOnce, { timeout: 15_000 }).toBeGreaterThanOrEqual(10);
    const quick = await post('quick');
    const answeredBefore = slow.order.filter((answer) => answer.status === 200).length;
    const all = await Promise.all(slow.all);
    expect(await held).toEqual({ status: 200, code: undefined });
    // Refused before: the bound was full of the flood's calls.
    expect(quick).toEqual({ status: 200, code: undefined });
    const refused = all.filter((answer) => answer.status === 503);
    expect(refused.every((answer) => answer.code === 'unavailable')).toBe(true);
    // The flood's newest waiting call gave way: one more refused than at once.
    expect(refused.length).toBeGreaterThanOrEqual(11);
    expect(answeredBefore).toBeLessThanOrEqual(8);
  }, 60_000);

  it('calls of the same mapping past the bound are refused as before, none displaced', async () => {
    const held = post('hold');
    const slow = flood(44, () => post('slow'));
    const all = await Promise.all(slow.all);
    expect(await held).toEqual({ status: 200, code: undefined });
    // 31 beside the hold in the process and 8 waiting: at least 39 answered, the rest refused.
    const refused = all.filter((answer) => answer.status === 503);
    expect(refused.every((answer) => answer.code === 'unavailable')).toBe(true);
    expect(refused.length).toBeGreaterThanOrEqual(4);
    expect(all.length - refused.length).toBeGreaterThanOrEqual(39);
  }, 60_000);
});

/**
 * Keeping the lead through a failed check: the lead is given up only when
 * another instance holds it, or when it went unconfirmed for a whole lease;
 * becoming the leader again after that (and only then) recovers the old
 * leader's heartbeats.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../engine/log.ts';
import { type LeadershipLoop, startLeadership } from '../engine/runtime/leadership-loop.ts';
import { waitFor } from './helpers/runtime.ts';

// 'hang': the check's query never answers (a connection a firewall dropped without a reset);
// 'late': it answers that the lead is held, but only once `release` is called.
type Answer = boolean | Error | 'hang' | 'late';

function scripted(answers: Answer[]) {
  let calls = 0;
  let release: () => void = () => undefined;
  return {
    calls: () => calls,
    release: () => release(),
    leadership: {
      async lead() {
        const answer = answers[Math.min(calls, answers.length - 1)] as Answer;
        calls++;
        if (answer instanceof Error) throw answer;
        if (answer === 'hang') return new Promise<boolean>(() => undefined);
        if (answer === 'late')
          return new Promise<boolean>((resolve) => {
            release = () => resolve(true);
          });
        return answer;
      },
      async resign() {},
    },
  };
}

const loops: LeadershipLoop[] = [];
afterEach(() => {
  for (const loop of loops.splice(0)) loop.stop();
});

async function start(answers: Answer[], leaseMs: number) {
  const script = scripted(answers);
  let gained = 0;
  const loop = await startLeadership({
    leadership: script.leadership,
    leaseMs,
    everyMs: 10,
    gained: async () => {
      gained++;
    },
    logger: createLogger('silent'),
  });
  loops.push(loop);
  return { loop, script, gained: () => gained };
}

describe('the leadership loop', () => {
  it('keeps leading through failed checks within the lease, and recovers only once', async () => {
    const down = new Error('connection reset');
    const { loop, script, gained } = await start([true, down, down, true, true], 60_000);
    expect(loop.leading()).toBe(true);
    await waitFor('several checks', () => script.calls() >= 6);
    expect(loop.leading()).toBe(true);
    expect(gained()).toBe(1);
  });

  it('gives the lead up when another instance holds it, and recovers again on regaining it', async () => {
    const { loop, script, gained } = await start([true, false, false, true], 60_000);
    await waitFor('the lead lost then regained', () => script.calls() >= 5 && loop.leading());
    expect(gained()).toBe(2);
  });

  it('gives the lead up after a whole lease without a confirmation', async () => {
    const { loop } = await start([true, new Error('database down')], 50);
    await waitFor('the lease to pass unconfirmed', () => !loop.leading());
    expect(loop.leading()).toBe(false);
  });

  it('gives the lead up after a whole lease without a confirmation when the check hangs', async () => {
    const { loop, script } = await start([true, 'hang'], 50);
    await waitFor('the check to hang', () => script.calls() >= 2);
    // Another instance may take the lead once the lease has passed: this one must not still lead.
    await waitFor('the lease to pass unconfirmed', () => !loop.leading(), 2_000);
    expect(loop.leading()).toBe(false);
  });

  it('an answer that comes a whole lease late confirms nothing: the next, in time, leads, taking over once', async () => {
    // After the late answer, one check finds another instance leading, then the lead comes back.
    const { loop, script, gained } = await start([true, 'late', false, true], 400);
    await waitFor('the check to hang', () => script.calls() >= 2);
    // Seen after that check was asked: a lease from here is a lease from its asking, at least.
    const hungBy = Date.now();
    await waitFor('the lease to pass unconfirmed', () => !loop.leading(), 5_000);
    await waitFor('a lease since the check was asked', () => Date.now() - hungBy > 400, 5_000);
    expect(gained()).toBe(1);
    // Another instance may lead by now: the late answer is not acted on (a takeover on it would
    // have failed that instance's running work); the checks after it are.
    script.release();
    await waitFor('the lead gained again', () => gained() >= 2, 5_000);
    const calls = script.calls();
    await waitFor('five more checks', () => script.calls() >= calls + 5, 5_000);
    expect(gained()).toBe(2);
    expect(loop.leading()).toBe(true);
  });
});

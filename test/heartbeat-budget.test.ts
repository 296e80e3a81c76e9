/**
 * A heartbeat sends its runner at most runtime.maxPromptBytes of message
 * and history, however large and many the pending events: it shows the
 * oldest events that fit, leaves the rest pending for the heartbeats that
 * follow, and shows an event larger than the whole budget cut inside its
 * wrapper, so that it is consumed and what waits behind it goes on. The
 * heartbeat over the real SQLite runtime store, with a runner that records
 * what it was sent.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_PROMPT_BYTES, messageBudget } from '../engine/runtime/prompt-budget.ts';
import type { Runner, RunRequest } from '../engine/runtime/runners/runner.ts';
import { END_MARKER, isBareWrapper, START_MARKER, wrapUntrusted } from '../engine/safety.ts';
import { testHeartbeat } from './helpers/heartbeat.ts';
import { waitFor } from './helpers/runtime.ts';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');
/** What a run sends of text: its message and its history. */
const sentBytes = (run: RunRequest) =>
  bytes(run.message) + run.history.reduce((sum, turn) => sum + bytes(turn.text), 0);

/** A heartbeat whose runner records each run and answers something other than the ack. */
function recorded(maxPromptBytes: number) {
  const runs: RunRequest[] = [];
  const runner: Runner = {
    run: async (input) => {
      runs.push(input);
      return { status: 'ok', reply: 'Noted, I will look into these alerts.' };
    },
  };
  const opened = testHeartbeat({
    runner,
    logger: pino({ level: 'silent' }),
    maxEvents: 100,
    maxPromptBytes,
  });
  cleanups.push(opened.close);
  return { ...opened, runs };
}

describe('the heartbeat within runtime.maxPromptBytes', () => {
  it('100 wakes of 250 KB each and a heartbeat: the runner is sent at most the budget per turn, the events not shown are shown by the next heartbeats, none is lost', async () => {
    const { heartbeat, store, runs } = recorded(DEFAULT_MAX_PROMPT_BYTES);
    const filler = 'URGENT alert: production database is down. '.repeat(5_800);
    for (let i = 0; i < 100; i++) {
      await store.addEvent({
        sessionKey: 'main',
        text: wrapUntrusted(`alert #${i}# ${filler}`, 'Webhook').text,
        source: 'wake',
        trusted: false,
      });
    }
    heartbeat.requestNow('wake');
    await waitFor(
      'every event consumed',
      async () => ((await store.pendingSizes('main', 1)).length === 0 ? true : undefined),
      60_000,
    );
    await heartbeat.idle();

    for (const run of runs) expect(sentBytes(run)).toBeLessThanOrEqual(DEFAULT_MAX_PROMPT_BYTES);
    // Each event shown exactly once, whole, in order, across the heartbeats.
    const shown = runs.flatMap((run) =>
      [...run.message.matchAll(/alert #(\d+)#/g)].map((match) => Number(match[1])),
    );
    expect(shown).toEqual([...Array(100).keys()]);
    expect(runs.every((run) => !run.message.includes('cut by hookgate'))).toBe(true);
    // Several heartbeats, each also sent the history that fits beside its events.
    expect(runs.length).toBeGreaterThan(10);
    expect(runs.at(-1)?.history.length).toBeGreaterThan(0);
    const records = await store.heartbeats(1_000);
    expect(records.every((record) => record.state === 'done')).toBe(true);
    expect(records.reduce((sum, record) => sum + record.events, 0)).toBe(100);
  });

  it('a wake larger than the whole budget: it is shown cut inside its wrapper, with the mark, and consumed; the events behind it follow', async () => {
    const maxPromptBytes = 16_384;
    const { heartbeat, store, runs } = recorded(maxPromptBytes);
    const wrapped = wrapUntrusted(`start of the flood ${'y'.repeat(60_000)} end`, 'Webhook');
    await store.addEvent({
      sessionKey: 'main',
      text: wrapped.text,
      source: 'wake',
      trusted: false,
    });
    await store.addEvent({
      sessionKey: 'main',
      text: 'after the flood',
      source: 'wake',
      trusted: true,
    });
    heartbeat.requestNow('wake');
    await waitFor('every event consumed', async () =>
      (await store.pendingSizes('main', 1)).length === 0 ? true : undefined,
    );
    await heartbeat.idle();

    const first = runs[0] as RunRequest;
    expect(bytes(first.message)).toBeLessThanOrEqual(messageBudget(maxPromptBytes));
    // The event's line is one whole wrapper: its own start and end markers, the cut inside.
    const start = first.message.indexOf(`System: <<<${START_MARKER} id="${wrapped.id}">>>`);
    const endLine = `<<<${END_MARKER} id="${wrapped.id}">>>`;
    expect(start).toBeGreaterThanOrEqual(0);
    const line = first.message.slice(
      start + 'System: '.length,
      first.message.indexOf(endLine) + endLine.length,
    );
    expect(isBareWrapper(line)).toBe(true);
    expect(line).toContain('start of the flood');
    expect(line).not.toContain(' end\n');
    expect(line).toMatch(
      /\[cut by hookgate: \d+ more bytes not shown \(runtime\.maxPromptBytes\)\]\n<<<END/,
    );
    // Nothing lost: the event behind it is shown once, by this heartbeat or the next.
    const after = runs.filter((run) => run.message.includes('System: after the flood'));
    expect(after).toHaveLength(1);
    const records = await store.heartbeats(10);
    expect(records.reduce((sum, record) => sum + record.events, 0)).toBe(2);
    for (const run of runs) expect(sentBytes(run)).toBeLessThanOrEqual(maxPromptBytes);
  });
});

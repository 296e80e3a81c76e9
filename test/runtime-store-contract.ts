/**
 * The contract every RuntimeStore implementation passes: the run queue (fair
 * claims of session heads, fenced writes, delays, wakes, retries), the
 * session records, and leadership, observed through the interface alone.
 * Run by each backend's test file; a backend shared by several instances
 * also runs the second-instance cases.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { fc, test } from '@fast-check/vitest';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ActionState } from '../engine/queue/action-store.ts';
import {
  ASKED_NOW_PAGE,
  type HeartbeatDeliveryClaim,
  type Claim,
  type NewEvent,
  type RunRow,
  type RuntimeStore,
} from '../engine/runtime/runtime-store.ts';
import { REQUEST_EXPIRY_MS, TAKEN_REQUEST_KEEP_MS } from '../engine/store/control-requests.ts';
import type { Action, AgentAction, WakeAction } from '../schemas/action.ts';

/** Stores over one set of data, and the ingress's way in. */
export type RuntimeStoreEnv = {
  /** A store over the data (called twice: two instances, or two connections to one file). */
  open(): Promise<RuntimeStore>;
  /** Store actions as the ingress accepts them (queued, in this order). */
  accept(actions: Action[]): Promise<void>;
  /** The delivery records of a run or heartbeat (their states), read from the data directly. */
  deliveryStates(sourceId: string): Promise<string[]>;
  /**
   * Make a request look asked (and taken, if it was) `ms` earlier than it was, in the data
   * directly (time passing).
   */
  backdateRequest(seq: number, ms: number): Promise<void>;
  /** The seqs of the requests and of the answers kept, read from the data directly. */
  requestRows(): Promise<{ requests: number[]; answers: number[] }>;
  cleanup(): Promise<void>;
};

export type RuntimeStoreContractOptions = {
  /**
   * Several instances share the store: run the second-instance cases (one lead at a time,
   * concurrent claims, requests taken once, live runs never taken over). False: one process owns
   * the store (it always leads; at start every run left running is its to take over).
   */
  shared: boolean;
};

const MAIN = 'agent:main:main';

function origin() {
  return {
    id: randomUUID(),
    receivedAt: new Date().toISOString(),
    client: '127.0.0.1',
    requestId: randomUUID(),
  };
}

/** A valid agent action in `sessionKey`. */
export function agentAction(sessionKey: string, message = 'hello', agentId = 'main'): AgentAction {
  return {
    kind: 'agent',
    ...origin(),
    hook: 'agent',
    untrusted: true,
    prompt: `wrapped: ${message}`,
    message,
    name: 'Contract',
    agentId,
    sessionKey,
    sessionKeySource: 'request',
    wakeMode: 'next-heartbeat',
    deliver: false,
    channel: 'last',
  };
}

/** A valid wake; `prompt` is the text as the agent gets it (wrapped), when the hook is untrusted. */
export function wakeAction(
  text: string,
  options: { mode?: 'now' | 'next-heartbeat'; prompt?: string } = {},
): WakeAction {
  return {
    kind: 'wake',
    ...origin(),
    hook: 'wake',
    untrusted: options.prompt !== undefined,
    ...(options.prompt !== undefined && { prompt: options.prompt }),
    text,
    mode: options.mode ?? 'now',
  };
}

const NOBODY: ReadonlySet<string> = new Set();

/** Poll an asynchronous condition; fail after `timeoutMs`. */
async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const ids = (rows: readonly RunRow[]) => rows.map((row) => row.id);
const claimOf = (row: RunRow): Claim => ({ id: row.id, attempts: row.attempts });

/** Register the shared suite for a runtime store factory. */
/** A finished heartbeat whose reply is to be delivered; returns its id. */
async function replyToDeliver(store: RuntimeStore, reply = 'r'): Promise<string> {
  const beat = await store.startHeartbeat('wake');
  await store.finishHeartbeat(beat, {
    state: 'done',
    events: [],
    reply,
    ack: false,
    deliver: true,
  });
  return beat;
}

/** A delivery claim's lease in the contract's tests. */
const LEASE = 30_000;
type Claimed = HeartbeatDeliveryClaim;

export function describeRuntimeStore(
  name: string,
  factory: () => Promise<RuntimeStoreEnv>,
  options: RuntimeStoreContractOptions,
): void {
  describe(`RuntimeStore contract: ${name}`, () => {
    let env: RuntimeStoreEnv;
    let store: RuntimeStore;
    const opened: RuntimeStore[] = [];
    const open = async () => {
      const next = await env.open();
      opened.push(next);
      return next;
    };
    /** Claim exactly these actions (oldest heads first), as the worker would. */
    const claimAll = async (expected: readonly Action[], on = store) => {
      const rows = await on.claimHeads(expected.length + 5, NOBODY);
      expect(ids(rows)).toEqual(expected.map((action) => action.id));
      return rows;
    };

    beforeEach(async () => {
      env = await factory();
      store = await open();
    });
    afterEach(async () => {
      for (const each of opened.splice(0)) await each.close();
      await env.cleanup();
    });

    describe('claimHeads', () => {
      it('claims the oldest session head first, one action per session, as running with one more attempt', async () => {
        const a1 = agentAction('hook:a', 'a1');
        const b1 = agentAction('hook:b', 'b1');
        const a2 = agentAction('hook:a', 'a2');
        const c1 = agentAction('hook:c', 'c1');
        await env.accept([a1, b1]);
        await env.accept([a2, c1]);

        const first = await store.claimHeads(10, NOBODY);
        expect(ids(first)).toEqual([a1.id, b1.id, c1.id]);
        for (const row of first) {
          expect(row).toMatchObject({ state: 'running', attempts: 1 });
          expect(row.startedAt).toEqual(expect.any(String));
        }
        expect(first[0]?.action).toEqual(a1);
        expect(await store.run(a1.id)).toMatchObject({ state: 'running', attempts: 1 });
        expect(await store.run(a2.id)).toMatchObject({ state: 'queued', attempts: 0 });

        // The head of hook:a runs: its next action waits, whatever the room.
        expect(await store.claimHeads(10, NOBODY)).toEqual([]);
        expect(await store.finish(claimOf(first[0] as RunRow), 'done', { status: 'ok' })).toBe(
          true,
        );
        expect(ids(await store.claimHeads(10, NOBODY))).toEqual([a2.id]);
      });

      it('gives the next session’s head while one session’s head runs, never that session’s next action', async () => {
        const a1 = agentAction('hook:a', 'a1');
        const a2 = agentAction('hook:a', 'a2');
        const b1 = agentAction('hook:b', 'b1');
        await env.accept([a1, a2, b1]);
        expect(ids(await store.claimHeads(1, NOBODY))).toEqual([a1.id]);
        expect(ids(await store.claimHeads(1, NOBODY))).toEqual([b1.id]);
        expect(await store.claimHeads(1, NOBODY)).toEqual([]);
      });

      it('respects the room and skips busy sessions, filling the room from the others', async () => {
        const heads = ['hook:a', 'hook:b', 'hook:c', 'hook:d'].map((key) => agentAction(key));
        await env.accept(heads);
        const [a, b, c, d] = heads as [Action, Action, Action, Action];
        expect(ids(await store.claimHeads(1, new Set(['hook:a'])))).toEqual([b.id]);
        expect(ids(await store.claimHeads(2, NOBODY))).toEqual([a.id, c.id]);
        expect(await store.claimHeads(0, NOBODY)).toEqual([]);
        expect(await store.claimHeads(5, new Set(['hook:d']))).toEqual([]);
        expect(ids(await store.claimHeads(5, NOBODY))).toEqual([d.id]);
      });

      it('a retried action older than its session’s running one waits for it to end', async () => {
        const a1 = agentAction('hook:a', 'a1');
        const a2 = agentAction('hook:a', 'a2');
        await env.accept([a1, a2]);
        const [first] = await claimAll([a1]);
        await store.finish(claimOf(first as RunRow), 'dead', { status: 'error' });
        const [second] = await claimAll([a2]);
        expect(await store.retryDead(a1.id)).toBe(true);
        expect(await store.claimHeads(10, NOBODY)).toEqual([]);
        expect(await store.hasRunnable()).toBe(false);
        await store.finish(claimOf(second as RunRow), 'done', { status: 'ok' });
        expect(await store.hasRunnable()).toBe(true);
        expect(await store.claimHeads(10, NOBODY)).toMatchObject([{ id: a1.id, attempts: 1 }]);
      });

      it('never returns a wake: wakes are applied, not claimed', async () => {
        const wake = wakeAction('a wake');
        const agent = agentAction('hook:a');
        await env.accept([wake, agent]);
        expect(ids(await store.claimHeads(10, NOBODY))).toEqual([agent.id]);
        expect(await store.run(wake.id)).toMatchObject({ state: 'queued', attempts: 0 });
      });

      it('hasRunnable: a pending wake or a head that may run now', async () => {
        expect(await store.hasRunnable()).toBe(false);
        await env.accept([wakeAction('w')]);
        expect(await store.hasRunnable()).toBe(true);
        await store.applyWakes(MAIN, 10);
        expect(await store.hasRunnable()).toBe(false);
        await env.accept([agentAction('hook:a')]);
        expect(await store.hasRunnable()).toBe(true);
        await store.claimHeads(10, NOBODY);
        // Its head runs: nothing else may.
        await env.accept([agentAction('hook:a')]);
        expect(await store.hasRunnable()).toBe(false);
      });
    });

    describe('fenced writes', () => {
      async function claimOne(): Promise<RunRow> {
        const action = agentAction('hook:fence');
        await env.accept([action]);
        const [row] = await claimAll([action]);
        return row as RunRow;
      }

      it('a stale claim changes nothing: finish, saveOutcome and requeue return false', async () => {
        const row = await claimOne();
        for (const stale of [
          { id: row.id, attempts: row.attempts - 1 },
          { id: row.id, attempts: row.attempts + 1 },
          { id: 'no-such-run', attempts: 1 },
        ]) {
          const event = { sessionKey: MAIN, text: 'stale', source: 'agent', trusted: true };
          expect(await store.finish(stale, 'done', { status: 'ok', reply: 'x' }, event)).toBe(
            false,
          );
          expect(await store.saveOutcome(stale, { status: 'delivering', reply: 'x' })).toBe(false);
          expect(await store.requeue(stale, 0, { status: 'retrying' })).toBe(false);
          await store.setRunnerGroup(stale, 4242);
        }
        expect(await store.run(row.id)).toEqual(row);
        expect(await store.events(MAIN, 10)).toEqual([]);
        expect(await store.claimHeads(10, NOBODY)).toEqual([]);
      });

      it('the claim saves progress, then finishes with its event in the same step, once', async () => {
        const row = await claimOne();
        const progress = {
          status: 'delivering' as const,
          reply: 'the reply',
          delivery: { state: 'pending' as const, parts: 2, partsSent: 1 },
        };
        expect(await store.saveOutcome(claimOf(row), progress)).toBe(true);
        expect(await store.run(row.id)).toMatchObject({ state: 'running', outcome: progress });

        const outcome = { status: 'ok' as const, reply: 'the reply' };
        const event = {
          sessionKey: MAIN,
          text: 'run finished',
          source: 'agent',
          actionId: row.id,
          trusted: false,
        };
        expect(await store.finish(claimOf(row), 'done', outcome, event)).toBe(true);
        const done = await store.run(row.id);
        expect(done).toMatchObject({ state: 'done', attempts: 1, outcome });
        expect(done?.finishedAt).toEqual(expect.any(String));
        const [posted, ...rest] = await store.events(MAIN, 10);
        expect(rest).toEqual([]);
        expect(posted).toMatchObject({ ...event, consumedBy: null });

        // Over: the same claim writes nothing more.
        expect(await store.finish(claimOf(row), 'failed', { status: 'error' }, event)).toBe(false);
        expect(await store.saveOutcome(claimOf(row), { status: 'error' })).toBe(false);
        expect(await store.requeue(claimOf(row), 0, { status: 'retrying' })).toBe(false);
        expect(await store.run(row.id)).toEqual(done);
        expect(await store.events(MAIN, 10)).toHaveLength(1);
      });

      it('finish adds the run’s turns to history with its outcome; a lost run adds none', async () => {
        const row = await claimOne();
        const owner = { agentId: 'main', sessionKey: 'hook:fence', kind: 'agent' as const };
        const turns = { owner, prompt: 'the prompt', reply: 'the reply' };
        const stale = { id: row.id, attempts: row.attempts + 1 };
        expect(
          await store.finish(stale, 'done', { status: 'ok', reply: 'x' }, undefined, turns),
        ).toBe(false);
        expect(await store.history(owner, 10)).toEqual([]);

        expect(
          await store.finish(
            claimOf(row),
            'done',
            { status: 'ok', reply: 'the reply' },
            undefined,
            turns,
          ),
        ).toBe(true);
        expect(
          (await store.history(owner, 10)).map(({ role, text, runId }) => ({ role, text, runId })),
        ).toEqual([
          { role: 'user', text: 'the prompt', runId: row.id },
          { role: 'assistant', text: 'the reply', runId: row.id },
        ]);
        // Over: a second finish of the same claim adds nothing.
        expect(
          await store.finish(claimOf(row), 'done', { status: 'ok', reply: 'x' }, undefined, turns),
        ).toBe(false);
        expect(await store.history(owner, 10)).toHaveLength(2);
      });

      it('finish records the run’s delivery with its end; a lost run records none', async () => {
        const row = await claimOne();
        const delivery = {
          source: 'agent' as const,
          sourceId: row.id,
          channel: 'slack',
          recipient: 'U1',
          text: 'the reply',
          state: 'sent' as const,
          attempts: 1,
          parts: 1,
          partsSent: 1,
        };
        const stale = { id: row.id, attempts: row.attempts + 1 };
        const outcome = { status: 'ok' as const, reply: 'the reply' };
        expect(await store.finish(stale, 'done', outcome, undefined, undefined, delivery)).toBe(
          false,
        );
        expect(await env.deliveryStates(row.id)).toEqual([]);
        expect(
          await store.finish(claimOf(row), 'done', outcome, undefined, undefined, delivery),
        ).toBe(true);
        expect(await env.deliveryStates(row.id)).toEqual(['sent']);
        expect(
          await store.finish(claimOf(row), 'done', outcome, undefined, undefined, delivery),
        ).toBe(false);
        expect(await env.deliveryStates(row.id)).toEqual(['sent']);
      });

      it('saveOutcome adds the turns it is given with the progress, once; a lost run adds none', async () => {
        const row = await claimOne();
        const owner = { agentId: 'main', sessionKey: 'hook:fence', kind: 'agent' as const };
        const turns = { owner, prompt: 'the prompt', reply: 'the reply' };
        const progress = { status: 'delivering' as const, reply: 'the reply' };
        const stale = { id: row.id, attempts: row.attempts - 1 };
        expect(await store.saveOutcome(stale, progress, turns)).toBe(false);
        expect(await store.history(owner, 10)).toEqual([]);

        expect(await store.saveOutcome(claimOf(row), progress, turns)).toBe(true);
        expect(await store.saveOutcome(claimOf(row), progress)).toBe(true);
        expect(await store.finish(claimOf(row), 'done', { status: 'ok', reply: 'the reply' })).toBe(
          true,
        );
        expect((await store.history(owner, 10)).map((turn) => turn.text)).toEqual([
          'the prompt',
          'the reply',
        ]);
      });

      it('finish ends runs failed or dead too', async () => {
        const failing = agentAction('hook:f');
        const dying = agentAction('hook:d');
        await env.accept([failing, dying]);
        const [f, d] = await claimAll([failing, dying]);
        expect(await store.finish(claimOf(f as RunRow), 'failed', { status: 'error' })).toBe(true);
        expect(await store.finish(claimOf(d as RunRow), 'dead', { status: 'timeout' })).toBe(true);
        expect((await store.run(failing.id))?.state).toBe('failed');
        expect((await store.run(dying.id))?.state).toBe('dead');
      });

      it('requeue with no delay: claimable at once, attempts kept; refundAttempt gives one back', async () => {
        const row = await claimOne();
        const retrying = { status: 'retrying' as const, reason: 'busy' };
        expect(await store.requeue(claimOf(row), 0, retrying)).toBe(true);
        expect(await store.run(row.id)).toMatchObject({
          state: 'queued',
          attempts: 1,
          outcome: retrying,
        });
        expect(await store.hasRunnable()).toBe(true);
        const [again] = await store.claimHeads(10, NOBODY);
        expect(again).toMatchObject({ id: row.id, attempts: 2, state: 'running' });
        // The old claim lost the run.
        expect(await store.finish(claimOf(row), 'done', { status: 'ok' })).toBe(false);

        const refund = { refundAttempt: true };
        expect(await store.requeue(claimOf(again as RunRow), 0, retrying, refund)).toBe(true);
        expect(await store.run(row.id)).toMatchObject({ state: 'queued', attempts: 1 });
        expect(await store.claimHeads(10, NOBODY)).toMatchObject([{ id: row.id, attempts: 2 }]);
      });

      it('requeue with a delay holds its whole session back until due, and only that session', async () => {
        const a1 = agentAction('hook:a', 'a1');
        const a2 = agentAction('hook:a', 'a2');
        await env.accept([a1, a2]);
        const [row] = await claimAll([a1]);
        const before = Date.now();
        expect(await store.requeue(claimOf(row as RunRow), 60_000, { status: 'retrying' })).toBe(
          true,
        );
        const held = await store.run(a1.id);
        expect(held).toMatchObject({ state: 'queued', attempts: 1 });
        // By the store's clock: a margin for a database host's clock a little behind this one.
        expect(held?.nextAttemptAtMs).toBeGreaterThan(before + 50_000);
        expect(await store.hasRunnable()).toBe(false);
        expect(await store.claimHeads(10, NOBODY)).toEqual([]);

        const b1 = agentAction('hook:b', 'b1');
        await env.accept([b1]);
        expect(await store.hasRunnable()).toBe(true);
        expect(ids(await store.claimHeads(10, NOBODY))).toEqual([b1.id]);
        expect((await store.run(a2.id))?.state).toBe('queued');
      });

      it('a short delay: the head runs again once due, before the rest of its session', async () => {
        const a1 = agentAction('hook:a', 'a1');
        const a2 = agentAction('hook:a', 'a2');
        await env.accept([a1, a2]);
        const [row] = await claimAll([a1]);
        expect(await store.requeue(claimOf(row as RunRow), 300, { status: 'retrying' })).toBe(true);
        await until('the delayed head to be due', () => store.hasRunnable());
        expect(await store.claimHeads(10, NOBODY)).toMatchObject([{ id: a1.id, attempts: 2 }]);
      });
    });

    describe('applyWakes', () => {
      it('applies wakes oldest first in batches: each text (or prompt) an event of the main session, each done', async () => {
        const one = wakeAction('one', { mode: 'now' });
        const two = wakeAction('two', { mode: 'next-heartbeat', prompt: 'wrapped two' });
        const three = wakeAction('three', { mode: 'now' });
        await env.accept([one, agentAction('hook:a')]);
        await env.accept([two, three]);

        expect(await store.applyWakes(MAIN, 2)).toEqual({
          applied: 2,
          modes: ['now', 'next-heartbeat'],
        });
        expect((await store.run(one.id))?.state).toBe('done');
        expect((await store.run(two.id))?.state).toBe('done');
        expect((await store.run(three.id))?.state).toBe('queued');
        expect(await store.applyWakes(MAIN, 2)).toEqual({ applied: 1, modes: ['now'] });
        expect(await store.applyWakes(MAIN, 2)).toEqual({ applied: 0, modes: [] });
        expect((await store.run(three.id))?.state).toBe('done');

        const events = (await store.pendingEvents(MAIN, 10)).map((event) => ({
          text: event.text,
          actionId: event.actionId,
          trusted: event.trusted,
          sessionKey: event.sessionKey,
        }));
        expect(events).toEqual([
          { text: 'one', actionId: one.id, trusted: true, sessionKey: MAIN },
          { text: 'wrapped two', actionId: two.id, trusted: false, sessionKey: MAIN },
          { text: 'three', actionId: three.id, trusted: true, sessionKey: MAIN },
        ]);
        expect(await store.events('hook:a', 10)).toEqual([]);
      });
    });

    describe('pendingAskedNow', () => {
      /** Accept and run `run`, its end posting its summary into the main session. */
      async function runWithSummary(run: AgentAction): Promise<void> {
        await env.accept([run]);
        const [row] = await store.claimHeads(1, NOBODY);
        expect(row?.id).toBe(run.id);
        const summary = {
          sessionKey: MAIN,
          text: 'summary',
          source: 'hook-summary',
          actionId: run.id,
          trusted: false,
        };
        await store.finish(claimOf(row as RunRow), 'done', { status: 'ok', reply: 'r' }, summary);
      }

      it('true while a pending event came from a wake or run that asked for a heartbeat now', async () => {
        expect(await store.pendingAskedNow(MAIN)).toBe(false);
        const later = wakeAction('later', { mode: 'next-heartbeat' });
        await env.accept([later]);
        await store.applyWakes(MAIN, 10);
        // Events that asked for nothing, or came from no action, ask for no heartbeat.
        await store.addEvent({ sessionKey: MAIN, text: 'note', source: 'delivery', trusted: true });
        expect(await store.pendingAskedNow(MAIN)).toBe(false);
        // Nor an event whose action is gone.
        await store.addEvent({
          sessionKey: MAIN,
          text: 'orphan',
          source: 'hook-summary',
          actionId: 'no-such-action',
          trusted: false,
        });
        expect(await store.pendingAskedNow(MAIN)).toBe(false);

        const now = wakeAction('now', { mode: 'now' });
        await env.accept([now]);
        await store.applyWakes(MAIN, 10);
        expect(await store.pendingAskedNow(MAIN)).toBe(true);
        expect(await store.pendingAskedNow('hook:other')).toBe(false);

        const done = await store.startHeartbeat('wake');
        const seqs = (await store.pendingEvents(MAIN, 10)).map((event) => event.seq);
        expect(
          await store.finishHeartbeat(done, {
            state: 'done',
            events: seqs,
            reply: 'ok',
            ack: true,
          }),
        ).toBe(true);
        expect(await store.pendingAskedNow(MAIN)).toBe(false);

        // An agent run's summary, its run having asked with wakeMode.
        const run = { ...agentAction('hook:asks'), wakeMode: 'now' as const };
        await runWithSummary(run);
        expect(await store.pendingAskedNow(MAIN)).toBe(true);
      });

      /** Add `count` pending main-session events that came from no action (they ask for nothing). */
      async function addNotes(count: number): Promise<void> {
        for (let done = 0; done < count; done += 500) {
          const notes = Array.from({ length: Math.min(500, count - done) }, (_, i) => ({
            sessionKey: MAIN,
            text: `note ${done + i}`,
            source: 'delivery',
            trusted: true,
          }));
          await Promise.all(notes.map((note) => store.addEvent(note)));
        }
      }

      it('finds the one event that asked deep in a long backlog (neither oldest nor newest)', async () => {
        await addNotes(199);
        await env.accept([wakeAction('deep', { mode: 'now' })]);
        await store.applyWakes(MAIN, 10);
        // Several pages above it, more than a read of the newest 5,000 would see.
        await addNotes(Math.max(5_100, 2 * ASKED_NOW_PAGE + 100));
        expect(await store.pendingAskedNow(MAIN)).toBe(true);
        // Read a page at a time: aborted while its first page is read, it reads no further.
        const stopping = new AbortController();
        const read = store.pendingAskedNow(MAIN, stopping.signal);
        stopping.abort();
        expect(await read).toBe(false);
      });

      it('a run whose content holds a NUL escape is still read (it asked for now)', async () => {
        await runWithSummary({ ...agentAction('hook:nul', 'a\u0000b'), wakeMode: 'now' as const });
        expect(await store.pendingAskedNow(MAIN)).toBe(true);
      });

      it('a nested "mode" in a run’s content asks for nothing', async () => {
        const run = {
          ...agentAction('hook:nested', '{"mode":"now"}'),
          wakeMode: 'next-heartbeat' as const,
        };
        await runWithSummary(run);
        expect(await store.pendingAskedNow(MAIN)).toBe(false);
      });
    });

    describe('reading runs', () => {
      it('runs newest first (with a state filter), run by id, states of known ids', async () => {
        const a = agentAction('hook:a');
        const b = agentAction('hook:b');
        const wake = wakeAction('w');
        await env.accept([a, b]);
        await env.accept([wake]);
        const all = await store.runs(10);
        expect(ids(all)).toEqual([wake.id, b.id, a.id]);
        expect(all[1]).toMatchObject({
          id: b.id,
          state: 'queued',
          attempts: 0,
          startedAt: null,
          finishedAt: null,
          outcome: null,
          action: b,
        });
        expect(all[0]?.seq).toBeGreaterThan(all[1]?.seq ?? Number.POSITIVE_INFINITY);
        expect(ids(await store.runs(2))).toEqual([wake.id, b.id]);

        await claimAll([a, b]);
        expect(ids(await store.runs(10, 'running'))).toEqual([b.id, a.id]);
        expect(ids(await store.runs(1, 'running'))).toEqual([b.id]);
        expect(ids(await store.runs(10, 'queued'))).toEqual([wake.id]);
        expect(await store.runs(10, 'dead')).toEqual([]);

        expect(await store.run('no-such-run')).toBeUndefined();
        expect((await store.run(wake.id))?.action).toEqual(wake);
        const states = await store.states([a.id, wake.id, 'no-such-run']);
        expect([...states.entries()].sort()).toEqual(
          [
            [a.id, 'running'],
            [wake.id, 'queued'],
          ].sort(),
        );
        expect((await store.states([])).size).toBe(0);
      });

      it('countByState has every state, 0 when none', async () => {
        expect(await store.countByState()).toEqual({
          queued: 0,
          running: 0,
          done: 0,
          failed: 0,
          dead: 0,
        });
        const actions = ['a', 'b', 'c', 'd'].map((key) => agentAction(`hook:${key}`));
        await env.accept(actions);
        const [a, b, c] = await claimAll(actions);
        await store.finish(claimOf(a as RunRow), 'done', { status: 'ok' });
        await store.finish(claimOf(b as RunRow), 'failed', { status: 'error' });
        await store.finish(claimOf(c as RunRow), 'dead', { status: 'error' });
        await env.accept([agentAction('hook:e'), agentAction('hook:f')]);
        expect(await store.countByState()).toEqual({
          queued: 2,
          running: 1,
          done: 1,
          failed: 1,
          dead: 1,
        });
      });
    });

    describe('retryDead', () => {
      async function ended(state: 'done' | 'failed' | 'dead', outcome: RunRow['outcome']) {
        const action = agentAction(`hook:${state}-${randomUUID()}`);
        await env.accept([action]);
        const [row] = await claimAll([action]);
        expect(await store.finish(claimOf(row as RunRow), state, outcome ?? { status: 'ok' })).toBe(
          true,
        );
        return action;
      }

      it('a dead action goes back to the queue with fresh attempts and runs again', async () => {
        const dead = await ended('dead', { status: 'error', reason: 'gave up' });
        expect(await store.retryDead(dead.id)).toBe(true);
        expect(await store.run(dead.id)).toMatchObject({
          state: 'queued',
          attempts: 0,
          outcome: null,
        });
        expect(await store.claimHeads(10, NOBODY)).toMatchObject([{ id: dead.id, attempts: 1 }]);
        // Running now: not dead any more.
        expect(await store.retryDead(dead.id)).toBe(false);
      });

      it('failed only when asked, done never, unknown ids not at all', async () => {
        const failed = await ended('failed', { status: 'error' });
        const done = await ended('done', { status: 'ok' });
        expect(await store.retryDead(failed.id)).toBe(false);
        expect((await store.run(failed.id))?.state).toBe('failed');
        expect(await store.retryDead(failed.id, { failed: true })).toBe(true);
        expect(await store.run(failed.id)).toMatchObject({ state: 'queued', attempts: 0 });
        expect(await store.retryDead(done.id, { failed: true })).toBe(false);
        expect(await store.run(done.id)).toMatchObject({ state: 'done', attempts: 1 });
        expect(await store.retryDead('no-such-run', { failed: true })).toBe(false);
        const queued = agentAction('hook:q');
        await env.accept([queued]);
        expect(await store.retryDead(queued.id, { failed: true })).toBe(false);
      });

      it('a run that died delivering comes back delivering, its reply kept (a NUL in it too)', async () => {
        const dead = await ended('dead', {
          status: 'error',
          reply: 'the reply\u0000',
          reason: 'delivery failed',
          delivery: { state: 'dead', channel: 'slack', parts: 2, partsSent: 1, attempts: 5 },
        });
        expect(await store.retryDead(dead.id)).toBe(true);
        const row = await store.run(dead.id);
        expect(row).toMatchObject({
          state: 'queued',
          attempts: 0,
          outcome: {
            status: 'delivering',
            reply: 'the reply\u0000',
            delivery: { channel: 'slack', parts: 2, partsSent: 1, attempts: 0 },
          },
        });
      });
    });

    describe('session records', () => {
      it('events: pending oldest first, all newest first, each session apart, with limits', async () => {
        for (const text of ['e1', 'e2', 'e3', 'e4'])
          await store.addEvent({ sessionKey: 'k1', text, source: 'test', trusted: true });
        await store.addEvent({
          sessionKey: 'k2',
          text: 'other',
          source: 'hook',
          actionId: 'act-1',
          trusted: false,
        });
        const pending = await store.pendingEvents('k1', 2);
        expect(pending.map((event) => event.text)).toEqual(['e1', 'e2']);
        expect(pending[0]).toMatchObject({
          sessionKey: 'k1',
          source: 'test',
          actionId: null,
          trusted: true,
          consumedBy: null,
          createdAt: expect.any(String),
        });
        expect((pending[1]?.seq ?? 0) > (pending[0]?.seq ?? 0)).toBe(true);
        expect((await store.events('k1', 3)).map((event) => event.text)).toEqual([
          'e4',
          'e3',
          'e2',
        ]);
        expect(await store.events('k2', 10)).toMatchObject([
          { text: 'other', actionId: 'act-1', trusted: false, source: 'hook' },
        ]);
        expect(await store.pendingEvents('k3', 10)).toEqual([]);
      });

      it('history: one owner’s turns oldest first, never another agent’s or kind’s', async () => {
        const owner = { agentId: 'main', sessionKey: 'hook:h', kind: 'agent' as const };
        const otherAgent = { ...owner, agentId: 'ops' };
        const heartbeat = { ...owner, kind: 'heartbeat' as const };
        await store.addTurns(owner, 'r1', 'p1', 'a1');
        await store.addTurns(otherAgent, 'r2', 'p-ops', 'a-ops');
        await store.addTurns(heartbeat, 'r3', 'p-hb', 'a-hb');
        await store.addTurns(owner, 'r4', 'p2', 'a2');
        await store.claimHeartbeatTurns('ops');

        const turns = await store.history(owner, 10);
        expect(turns.map(({ role, text, runId }) => ({ role, text, runId }))).toEqual([
          { role: 'user', text: 'p1', runId: 'r1' },
          { role: 'assistant', text: 'a1', runId: 'r1' },
          { role: 'user', text: 'p2', runId: 'r4' },
          { role: 'assistant', text: 'a2', runId: 'r4' },
        ]);
        expect(turns[0]?.createdAt).toEqual(expect.any(String));
        expect((await store.history(owner, 3)).map((turn) => turn.text)).toEqual([
          'a1',
          'p2',
          'a2',
        ]);
        expect((await store.history(otherAgent, 10)).map((turn) => turn.text)).toEqual([
          'p-ops',
          'a-ops',
        ]);
        expect((await store.history(heartbeat, 10)).map((turn) => turn.text)).toEqual([
          'p-hb',
          'a-hb',
        ]);
        expect(await store.history({ ...owner, sessionKey: 'hook:other' }, 10)).toEqual([]);
      });

      it('sizes: the UTF-8 bytes of pending events and of the last turns, weighed without their texts', async () => {
        const owner = { agentId: 'main', sessionKey: 'hook:sizes', kind: 'agent' as const };
        await store.addTurns(owner, 'r1', 'p1', 'é'.repeat(10));
        await store.addTurns(owner, 'r2', 'prompt two', 'a2');
        expect(await store.historySizes(owner, 3)).toEqual([2, 10, 20]);
        expect(await store.historySizes({ ...owner, agentId: 'ops' }, 3)).toEqual([]);
        for (const text of ['one', '€€', 'three']) {
          await store.addEvent({ sessionKey: MAIN, text, source: 'wake', trusted: true });
        }
        const [first, ...rest] = await store.pendingEvents(MAIN, 10);
        const id = await store.startHeartbeat('test');
        await store.finishHeartbeat(id, { state: 'done', events: [first?.seq as number] });
        expect(await store.pendingSizes(MAIN, 10)).toEqual([
          { seq: rest[0]?.seq, bytes: 6 },
          { seq: rest[1]?.seq, bytes: 5 },
        ]);
        expect(await store.pendingSizes(MAIN, 1)).toHaveLength(1);
      });

      it('heartbeats: newest first; done consumes its events, failed keeps them pending', async () => {
        const events = [];
        for (const text of ['e1', 'e2', 'e3']) {
          await store.addEvent({ sessionKey: MAIN, text, source: 'wake', trusted: true });
        }
        events.push(...(await store.pendingEvents(MAIN, 10)));
        const [e1, e2, e3] = events.map((event) => event.seq) as [number, number, number];

        const first = await store.startHeartbeat('interval');
        const second = await store.startHeartbeat('wake');
        const third = await store.startHeartbeat('manual');
        expect((await store.heartbeats(10)).map((row) => row.id)).toEqual([third, second, first]);
        expect((await store.heartbeats(1)).map((row) => row.id)).toEqual([third]);
        expect({ ...(await store.heartbeats(10))[1] }).toEqual({
          id: second,
          reason: 'wake',
          state: 'running',
          started_at: expect.any(String),
          finished_at: null,
          events: 0,
          reply: null,
          ack: null,
          error: null,
          runner_pgid: null,
        });

        await store.finishHeartbeat(first, {
          state: 'done',
          events: [e1, e2],
          reply: 'HEARTBEAT_OK',
          ack: true,
        });
        expect((await store.pendingEvents(MAIN, 10)).map((event) => event.seq)).toEqual([e3]);
        const consumed = await store.events(MAIN, 10);
        expect(consumed.map((event) => [event.text, event.consumedBy])).toEqual([
          ['e3', null],
          ['e2', first],
          ['e1', first],
        ]);

        await store.finishHeartbeat(second, { state: 'failed', events: [e3], error: 'boom' });
        expect((await store.pendingEvents(MAIN, 10)).map((event) => event.seq)).toEqual([e3]);
        await store.finishHeartbeat(third, { state: 'done', events: [], reply: 'hi', ack: false });

        const rows = new Map((await store.heartbeats(10)).map((row) => [row.id, { ...row }]));
        expect(rows.get(first)).toMatchObject({
          state: 'done',
          events: 2,
          reply: 'HEARTBEAT_OK',
          ack: 1,
          error: null,
          finished_at: expect.any(String),
        });
        expect(rows.get(second)).toMatchObject({
          state: 'failed',
          events: 1,
          reply: null,
          ack: null,
          error: 'boom',
          finished_at: expect.any(String),
        });
        expect(rows.get(third)).toMatchObject({ state: 'done', reply: 'hi', ack: 0 });
      });

      it('a heartbeat consumes only what it included: later events, other sessions and skipped events stay pending', async () => {
        const add = (sessionKey: string, text: string) =>
          store.addEvent({ sessionKey, text, source: 'wake', trusted: true });
        await add(MAIN, 'm1');
        await add('hook:other', 'o1');
        await add(MAIN, 'm2');
        await add(MAIN, 'm3');
        const included = await store.pendingEvents(MAIN, 2);
        expect(included.map((event) => event.text)).toEqual(['m1', 'm2']);
        // Arrives while the heartbeat runs: not in its prompt, so not consumed by it.
        await add(MAIN, 'm4');
        const beat = await store.startHeartbeat('wake');
        await store.finishHeartbeat(beat, {
          state: 'done',
          events: included.map((event) => event.seq),
          reply: 'HEARTBEAT_OK',
          ack: true,
        });
        expect((await store.pendingEvents(MAIN, 10)).map((event) => event.text)).toEqual([
          'm3',
          'm4',
        ]);
        expect((await store.pendingEvents('hook:other', 10)).map((event) => event.text)).toEqual([
          'o1',
        ]);
        expect(
          (await store.events(MAIN, 10)).map((event) => [event.text, event.consumedBy]),
        ).toEqual([
          ['m4', null],
          ['m3', null],
          ['m2', beat],
          ['m1', beat],
        ]);
        expect((await store.events('hook:other', 10)).map((event) => event.consumedBy)).toEqual([
          null,
        ]);

        // Not the oldest pending ones (m3 skipped): exactly the listed events are consumed.
        const [m3, m4] = await store.pendingEvents(MAIN, 10);
        await add(MAIN, 'm5');
        const [, , m5] = await store.pendingEvents(MAIN, 10);
        const skipping = await store.startHeartbeat('wake');
        await store.finishHeartbeat(skipping, {
          state: 'done',
          events: [m4?.seq as number, m5?.seq as number],
          reply: 'HEARTBEAT_OK',
          ack: true,
        });
        expect((await store.pendingEvents(MAIN, 10)).map((event) => event.seq)).toEqual([m3?.seq]);

        // Consumed twice: the first heartbeat keeps them.
        const again = await store.startHeartbeat('wake');
        await store.finishHeartbeat(again, {
          state: 'done',
          events: included.map((event) => event.seq),
          reply: 'HEARTBEAT_OK',
          ack: true,
        });
        expect(
          (await store.events(MAIN, 10)).map((event) => [event.text, event.consumedBy]),
        ).toEqual([
          ['m5', skipping],
          ['m4', skipping],
          ['m3', null],
          ['m2', beat],
          ['m1', beat],
        ]);
      });

      it('a failed heartbeat consumes only the events it sets aside; the others stay pending', async () => {
        for (const text of ['a1', 'a2', 'a3'])
          await store.addEvent({ sessionKey: MAIN, text, source: 'wake', trusted: true });
        const [a1, a2, a3] = await store.pendingEvents(MAIN, 10);
        // The oldest pending event set aside (as a range of one on SQLite).
        const first = await store.startHeartbeat('isolate');
        await store.finishHeartbeat(first, {
          state: 'failed',
          events: [a1?.seq as number],
          error: 'event set aside: refused',
          setAside: [a1?.seq as number],
        });
        // One above a pending event: marked on its own, the pending one below stays so.
        const second = await store.startHeartbeat('isolate');
        await store.finishHeartbeat(second, {
          state: 'failed',
          events: [a3?.seq as number],
          error: 'event set aside: refused',
          setAside: [a3?.seq as number],
        });
        expect((await store.pendingEvents(MAIN, 10)).map((event) => event.seq)).toEqual([a2?.seq]);
        expect(
          (await store.events(MAIN, 10)).map((event) => [event.text, event.consumedBy]),
        ).toEqual([
          ['a3', second],
          ['a2', null],
          ['a1', first],
        ]);
        expect((await store.heartbeats(10)).map((row) => [row.state, row.events])).toEqual([
          ['failed', 1],
          ['failed', 1],
        ]);
        expect((await store.events(MAIN, 10)).map((event) => event.setAside)).toEqual([
          true,
          false,
          true,
        ]);

        // Offered again: a new pending copy in the stored form, trust and source kept.
        const again = await store.requeueEvent(a1?.seq as number);
        expect(again).toEqual({ seq: expect.any(Number) });
        const pending = await store.pendingEvents(MAIN, 10);
        expect(pending.map((event) => [event.text, event.trusted, event.source])).toEqual([
          ['a2', true, 'wake'],
          ['a1', true, 'wake'],
        ]);
        expect(pending[1]?.seq).toBe((again as { seq: number }).seq);
        // Asked twice: one copy, the second refused with where the first went.
        expect(await store.requeueEvent(a1?.seq as number)).toEqual({
          refused: 'requeued',
          copy: (again as { seq: number }).seq,
        });
        expect(await store.pendingEvents(MAIN, 10)).toHaveLength(2);
        expect(await store.requeueEvent(a2?.seq as number)).toEqual({
          refused: 'not-set-aside',
          consumedBy: null,
        });
        expect(await store.requeueEvent(999_999)).toEqual({ refused: 'unknown' });
        const done = await store.startHeartbeat('wake');
        await store.finishHeartbeat(done, {
          state: 'done',
          events: pending.map((event) => event.seq),
          reply: 'HEARTBEAT_OK',
          ack: true,
        });
        expect(await store.requeueEvent(a2?.seq as number)).toEqual({
          refused: 'not-set-aside',
          consumedBy: done,
        });
      });

      it('recoverHeartbeats fails the running ones (events stay pending) and returns their runner groups', async () => {
        await store.addEvent({ sessionKey: MAIN, text: 'e', source: 'wake', trusted: true });
        const [event] = await store.pendingEvents(MAIN, 10);
        const done = await store.startHeartbeat('interval');
        await store.setHeartbeatGroup(done, 111);
        await store.finishHeartbeat(done, { state: 'done', events: [], reply: 'ok', ack: true });
        const grouped = await store.startHeartbeat('interval');
        await store.setHeartbeatGroup(grouped, 4242);
        const ungrouped = await store.startHeartbeat('wake');
        // The recovering instance's own heartbeat (a lead it took back) is kept running.
        const own = await store.startHeartbeat('wake');
        await store.setHeartbeatGroup(own, 777);

        expect(await store.recoverHeartbeats([own])).toEqual([{ id: grouped, pgid: 4242 }]);
        expect((await store.heartbeats(10)).find((row) => row.id === own)?.state).toBe('running');
        await store.finishHeartbeat(own, { state: 'failed', events: [], error: 'ended' });
        const rows = new Map((await store.heartbeats(10)).map((row) => [row.id, { ...row }]));
        for (const id of [grouped, ungrouped]) {
          expect(rows.get(id)).toMatchObject({
            state: 'failed',
            error: expect.any(String),
            finished_at: expect.any(String),
          });
        }
        expect(rows.get(grouped)?.runner_pgid).toBe(4242);
        expect(rows.get(done)).toMatchObject({ state: 'done', reply: 'ok' });
        expect(await store.pendingEvents(MAIN, 10)).toEqual([event]);
        expect(await store.recoverHeartbeats()).toEqual([]);
        // Its own end, arriving late, changes nothing: the events stay for the next heartbeat.
        expect(
          await store.finishHeartbeat(ungrouped, {
            state: 'done',
            events: [(event as { seq: number }).seq],
            reply: 'late',
            ack: false,
          }),
        ).toBe(false);
        expect(await store.pendingEvents(MAIN, 10)).toEqual([event]);
        expect((await store.heartbeats(10)).find((row) => row.id === ungrouped)).toMatchObject({
          state: 'failed',
        });
      });

      it('a heartbeat reply to deliver stays in the store until its delivery ends, one attempt at a time', async () => {
        const acked = await store.startHeartbeat('wake');
        await store.finishHeartbeat(acked, { state: 'done', events: [], reply: 'OK', ack: true });
        const beat = await store.startHeartbeat('wake');
        await store.finishHeartbeat(beat, {
          state: 'done',
          events: [],
          reply: 'Disk full on web-1',
          ack: false,
          deliver: true,
        });
        // Only the reply to deliver, due at once.
        expect(await store.pendingHeartbeatDeliveries(10)).toEqual([
          { id: beat, dueAtMs: 0, claimedAtMs: null },
        ]);
        const at = Date.now();
        const first = (await store.claimHeartbeatDelivery(beat, at, at - LEASE)) as Claimed;
        expect(first).toMatchObject({
          id: beat,
          reply: 'Disk full on web-1',
          attempts: 1,
          partsSent: 0,
        });
        expect(await store.pendingHeartbeatDeliveries(10)).toEqual([
          { id: beat, dueAtMs: 0, claimedAtMs: at },
        ]);
        // One attempt in flight at a time.
        expect(await store.claimHeartbeatDelivery(beat, at + 1, at + 1 - LEASE)).toBeUndefined();
        expect(await store.saveHeartbeatDelivery(first, { partsSent: 1 })).toBe(true);
        // Retried later: not due before its time, then the next attempt resumes after the parts sent.
        const later = at + 60_000;
        expect(await store.saveHeartbeatDelivery(first, { partsSent: 1 }, { atMs: later })).toBe(
          true,
        );
        expect(await store.pendingHeartbeatDeliveries(10)).toEqual([
          { id: beat, dueAtMs: later, claimedAtMs: null },
        ]);
        expect(await store.claimHeartbeatDelivery(beat, later - 1, 0)).toBeUndefined();
        const second = (await store.claimHeartbeatDelivery(beat, later, later - LEASE)) as Claimed;
        expect(second).toMatchObject({
          id: beat,
          reply: 'Disk full on web-1',
          attempts: 2,
          partsSent: 1,
        });
        expect(second.claim).toBeGreaterThan(first.claim);
        // The first attempt's late writes change nothing.
        expect(await store.saveHeartbeatDelivery(first, { partsSent: 0 })).toBe(false);
        const record = {
          source: 'heartbeat' as const,
          sourceId: beat,
          channel: 'slack',
          text: 'Disk full on web-1',
          state: 'failed' as const,
          attempts: 2,
          parts: 2,
          partsSent: 1,
          error: 'channel_not_found',
        };
        const note = {
          sessionKey: MAIN,
          text: 'Heartbeat reply could not be delivered to slack',
          source: 'delivery',
          trusted: false,
        };
        expect(await store.endHeartbeatDelivery(first, record, note)).toBe(false);
        expect(await store.events(MAIN, 10)).toEqual([]);
        expect(await store.endHeartbeatDelivery(second, record, note)).toBe(true);
        expect((await store.events(MAIN, 10)).map((event) => event.text)).toEqual([note.text]);
        // Over: nothing pending, no attempt, no second end.
        expect(await store.pendingHeartbeatDeliveries(10)).toEqual([]);
        expect(
          await store.claimHeartbeatDelivery(beat, later + LEASE * 2, later + LEASE),
        ).toBeUndefined();
        expect(await store.endHeartbeatDelivery(second, record, note)).toBe(false);
        expect(await store.events(MAIN, 10)).toHaveLength(1);
      });

      it('an attempt in flight past its lease, or left by a dead instance (recoverHeartbeats), is taken over; its writes are refused after', async () => {
        const beat = await replyToDeliver(store);
        const at = Date.now();
        const dead = (await store.claimHeartbeatDelivery(beat, at, at - LEASE)) as Claimed;
        // Within its lease it is its instance's; past it, another may take it.
        expect(await store.claimHeartbeatDelivery(beat, at + LEASE - 1, at - 1)).toBeUndefined();
        const stale = (await store.claimHeartbeatDelivery(beat, at + LEASE, at)) as Claimed;
        expect(stale).toMatchObject({ attempts: 2 });
        expect(await store.saveHeartbeatDelivery(dead, { partsSent: 1 })).toBe(false);
        // After a crash the new leader need not wait for the lease.
        expect(await store.recoverHeartbeats()).toEqual([]);
        const next = (await store.claimHeartbeatDelivery(beat, at + LEASE + 2, 0)) as Claimed;
        expect(next).toMatchObject({ attempts: 3, partsSent: 0 });
        expect(await store.saveHeartbeatDelivery(stale, { partsSent: 1 }, { atMs: 0 })).toBe(false);
      });

      it("recoverHeartbeats keeps the attempts it is told are this instance's own", async () => {
        const mine = await replyToDeliver(store);
        const theirs = await replyToDeliver(store);
        const at = Date.now();
        const own = (await store.claimHeartbeatDelivery(mine, at, at - LEASE)) as Claimed;
        await store.claimHeartbeatDelivery(theirs, at, at - LEASE);
        expect(await store.recoverHeartbeats([mine])).toEqual([]);
        // The other instance's is free at once; this one's stays claimed, its writes still taken.
        expect(await store.claimHeartbeatDelivery(theirs, at + 1, 0)).toMatchObject({
          attempts: 2,
        });
        expect(await store.claimHeartbeatDelivery(mine, at + 1, 0)).toBeUndefined();
        expect(await store.saveHeartbeatDelivery(own, { partsSent: 1 })).toBe(true);
      });

      it('an attempt that keeps its progress renews its lease', async () => {
        const beat = await replyToDeliver(store);
        const at = Date.now() - 10 * LEASE;
        const claim = (await store.claimHeartbeatDelivery(beat, at, at - LEASE)) as Claimed;
        const before = Date.now();
        expect(await store.saveHeartbeatDelivery(claim, { partsSent: 1 })).toBe(true);
        const [row] = await store.pendingHeartbeatDeliveries(10);
        expect(row?.claimedAtMs).toBeGreaterThanOrEqual(before);
        // Its first claim is long past the lease; its progress is not.
        expect(await store.claimHeartbeatDelivery(beat, before, before - LEASE)).toBeUndefined();
      });

      it('an attempt shutdown interrupted is due at once and does not count; the claim number still grows', async () => {
        const beat = await replyToDeliver(store);
        const at = Date.now();
        const first = (await store.claimHeartbeatDelivery(beat, at, at - LEASE)) as Claimed;
        expect(
          await store.saveHeartbeatDelivery(first, { partsSent: 0 }, { atMs: at, refund: true }),
        ).toBe(true);
        const again = (await store.claimHeartbeatDelivery(beat, at, at - LEASE)) as Claimed;
        expect(again.attempts).toBe(1);
        expect(again.claim).toBeGreaterThan(first.claim);
        // The refunded attempt's number is not given out again: its late writes are refused.
        expect(await store.saveHeartbeatDelivery(first, { partsSent: 1 })).toBe(false);
      });

      it('a failed heartbeat, or one whose end did not take, leaves nothing to deliver', async () => {
        const failed = await store.startHeartbeat('wake');
        await store.finishHeartbeat(failed, {
          state: 'failed',
          events: [],
          error: 'x',
          deliver: true,
        });
        const taken = await store.startHeartbeat('wake');
        await store.recoverHeartbeats();
        expect(
          await store.finishHeartbeat(taken, {
            state: 'done',
            events: [],
            reply: 'late',
            ack: false,
            deliver: true,
          }),
        ).toBe(false);
        expect(await store.pendingHeartbeatDeliveries(10)).toEqual([]);
      });

      it('pendingHeartbeatDeliveries pages after an id', async () => {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          const beat = await replyToDeliver(store, `r${i}`);
          ids.push(beat);
        }
        const sorted = [...ids].sort();
        const first = await store.pendingHeartbeatDeliveries(2);
        expect(first.map((row) => row.id)).toEqual(sorted.slice(0, 2));
        const rest = await store.pendingHeartbeatDeliveries(10, first[1]?.id);
        expect(rest.map((row) => row.id)).toEqual(sorted.slice(2));
      });

      it('a heartbeat end keeps its turns in history only when it takes', async () => {
        const owner = { agentId: 'main', sessionKey: MAIN, kind: 'heartbeat' as const };
        const taken = await store.startHeartbeat('wake');
        expect(await store.recoverHeartbeats()).toEqual([]);
        // Failed by the new leader: the late end adds nothing to history.
        const late = { owner, prompt: 'System: late', reply: 'late reply' };
        expect(
          await store.finishHeartbeat(taken, {
            state: 'done',
            events: [],
            reply: 'x',
            turns: late,
          }),
        ).toBe(false);
        expect(await store.history(owner, 10)).toEqual([]);
        const fresh = await store.startHeartbeat('wake');
        const turns = { owner, prompt: 'System: now', reply: 'now reply' };
        expect(
          await store.finishHeartbeat(fresh, { state: 'done', events: [], reply: 'x', turns }),
        ).toBe(true);
        expect(
          (await store.history(owner, 10)).map((turn) => [turn.role, turn.text, turn.runId]),
        ).toEqual([
          ['user', 'System: now', fresh],
          ['assistant', 'now reply', fresh],
        ]);
      });

      it('recordDelivery returns a new id each time', async () => {
        const delivery = {
          source: 'agent' as const,
          sourceId: 'run-1',
          channel: 'slack',
          recipient: 'U1',
          text: 'hello',
          state: 'sent' as const,
          attempts: 1,
          parts: 1,
          partsSent: 1,
        };
        const first = await store.recordDelivery(delivery);
        const second = await store.recordDelivery({
          ...delivery,
          source: 'heartbeat',
          state: 'dead',
          error: 'refused',
        });
        expect(first).toEqual(expect.any(String));
        expect(first.length).toBeGreaterThan(0);
        expect(second).not.toBe(first);
      });

      it('routes: set, replaced, seeded only when missing', async () => {
        expect(await store.lastRoute('k')).toBeUndefined();
        await store.setRoute('k', 'slack', 'U1', true);
        expect(await store.lastRoute('k')).toEqual({ channel: 'slack', recipient: 'U1' });
        await store.setRoute('k', 'telegram', '42', true);
        expect(await store.lastRoute('k')).toEqual({ channel: 'slack', recipient: 'U1' });
        await store.setRoute('k', 'telegram', '42');
        expect(await store.lastRoute('k')).toEqual({ channel: 'telegram', recipient: '42' });
        expect(await store.lastRoute('other')).toBeUndefined();
      });

      it('requests: taken once, oldest first; withdrawn only while untaken; answered', async () => {
        const heartbeat = await store.request('heartbeat');
        const reload = await store.request('reload');
        const later = await store.request('heartbeat');
        expect(await store.requestTaken(heartbeat)).toBe(false);
        expect(await store.withdrawRequest(reload)).toBe(true);

        expect(await store.takeRequests()).toEqual([
          { seq: heartbeat, kind: 'heartbeat' },
          { seq: later, kind: 'heartbeat' },
        ]);
        expect(await store.takeRequests()).toEqual([]);
        expect(await store.requestTaken(heartbeat)).toBe(true);
        expect(await store.requestTaken(reload)).toBe(false);
        expect(await store.withdrawRequest(heartbeat)).toBe(false);

        expect(await store.requestResult(heartbeat)).toBeUndefined();
        await store.answerRequest(heartbeat, '{"ok":true}');
        expect(await store.requestResult(heartbeat)).toBe('{"ok":true}');
        expect(await store.requestResult(later)).toBeUndefined();

        const next = await store.request('reload');
        expect(await store.takeRequests()).toEqual([{ seq: next, kind: 'reload' }]);
      });

      it('a request its asker left behind (killed before taking it back) expires untaken', async () => {
        const stale = await store.request('heartbeat');
        const old = await store.request('reload');
        const fresh = await store.request('reload');
        // Past the longest any asker waits for a request to be taken: nobody asks for it now.
        await env.backdateRequest(stale, REQUEST_EXPIRY_MS + 60_000);
        // Just short of it: its asker may still be waiting.
        await env.backdateRequest(old, REQUEST_EXPIRY_MS - 60_000);
        expect(await store.takeRequests()).toEqual([
          { seq: old, kind: 'reload' },
          { seq: fresh, kind: 'reload' },
        ]);
        // Dropped, not kept: nothing later acts on it, and such rows do not pile up.
        expect(await store.requestTaken(stale)).toBe(false);
        expect(await store.withdrawRequest(stale)).toBe(false);
        expect(await store.heartbeatRequestUnserved()).toBeUndefined();
      });

      it('taken requests and their answers are dropped a day after they were taken, an asker still waiting keeps its answer', async () => {
        const reloaded = await store.request('reload');
        // Taken by an instance that died before its heartbeat ended: never answered.
        const unserved = await store.request('heartbeat');
        await store.takeRequests();
        await store.answerRequest(reloaded, '{"ok":true}');
        const recent = await store.request('reload');
        await store.takeRequests();
        await store.answerRequest(recent, '{"ok":false}');
        await env.backdateRequest(reloaded, TAKEN_REQUEST_KEEP_MS + 60_000);
        await env.backdateRequest(unserved, TAKEN_REQUEST_KEEP_MS + 60_000);
        await env.backdateRequest(recent, TAKEN_REQUEST_KEEP_MS - 60_000);

        const next = await store.request('reload');
        expect(await store.takeRequests()).toEqual([{ seq: next, kind: 'reload' }]);
        expect(await env.requestRows()).toEqual({ requests: [recent, next], answers: [recent] });
        expect(await store.requestResult(reloaded)).toBeUndefined();
        expect(await store.requestResult(recent)).toBe('{"ok":false}');
        // A day on, a new leader no longer runs the heartbeat nobody answered.
        expect(await store.heartbeatRequestUnserved()).toBeUndefined();
      });

      it('a heartbeat request taken a day ago and never answered is not run again, though nothing was asked since', async () => {
        const unserved = await store.request('heartbeat');
        await store.takeRequests();
        expect(await store.heartbeatRequestUnserved()).toBe(unserved);
        await env.backdateRequest(unserved, TAKEN_REQUEST_KEEP_MS + 60_000);
        // No request taken since, so nothing pruned it: a new leader must still not run it.
        expect(await store.heartbeatRequestUnserved()).toBeUndefined();
      });

      it('an older heartbeat request never answered is dropped with a newer one served, however the clock stepped', async () => {
        const older = await store.request('heartbeat');
        await store.takeRequests();
        const newer = await store.request('heartbeat');
        await store.takeRequests();
        await store.answerRequest(newer, 'heartbeat h1');
        // The clock stepped back between the two takes: the older looks taken later.
        await env.backdateRequest(older, TAKEN_REQUEST_KEEP_MS - 60_000);
        await env.backdateRequest(newer, TAKEN_REQUEST_KEEP_MS + 60_000);

        const next = await store.request('reload');
        await store.takeRequests();
        // Kept alone, the older would read as the newest unserved: a heartbeat nobody asks for.
        expect(await store.heartbeatRequestUnserved()).toBeUndefined();
        expect(await env.requestRows()).toEqual({ requests: [next], answers: [] });
      });

      it('the newest heartbeat request taken and never answered is found; answered, or a reload, it is not', async () => {
        expect(await store.heartbeatRequestUnserved()).toBeUndefined();
        const first = await store.request('heartbeat');
        // Not taken yet: the server that takes it serves it.
        expect(await store.heartbeatRequestUnserved()).toBeUndefined();
        await store.takeRequests();
        expect(await store.heartbeatRequestUnserved()).toBe(first);
        await store.answerRequest(first, 'heartbeat h1');
        expect(await store.heartbeatRequestUnserved()).toBeUndefined();
        // An older one unanswered behind a newer one served: served by it too.
        const second = await store.request('heartbeat');
        const third = await store.request('heartbeat');
        await store.takeRequests();
        expect(await store.heartbeatRequestUnserved()).toBe(third);
        // Answered by the end of the heartbeat that served it, in the same write.
        const served = await store.startHeartbeat('requested');
        await store.finishHeartbeat(served, {
          state: 'failed',
          events: [],
          error: 'runner down',
          answers: [third],
        });
        expect(await store.heartbeatRequestUnserved()).toBeUndefined();
        expect(await store.requestResult(third)).toBe(`heartbeat ${served}`);
        expect(second).toBeLessThan(third);
        // Another kind of request is not a heartbeat's.
        await store.request('reload');
        await store.takeRequests();
        expect(await store.heartbeatRequestUnserved()).toBeUndefined();
      });

      /** Add an event and set it aside, as a heartbeat that isolated it does; its seq. */
      async function setAsideEvent(event: NewEvent): Promise<number> {
        await store.addEvent(event);
        const [pending] = await store.pendingEvents(event.sessionKey, 10);
        const seq = pending?.seq as number;
        const failed = await store.startHeartbeat('isolate');
        await store.finishHeartbeat(failed, {
          state: 'failed',
          events: [seq],
          error: 'event set aside: refused',
          setAside: [seq],
        });
        return seq;
      }

      it('requeues of one set-aside event racing from two stores make one copy', async () => {
        const seq = await setAsideEvent({
          sessionKey: MAIN,
          text: 'raced',
          source: 'wake',
          trusted: false,
        });
        const other = await open();
        const results = await Promise.all(
          [store, other, store, other].map((on) => on.requeueEvent(seq)),
        );
        const copies = results.filter((result) => 'seq' in result);
        expect(copies).toHaveLength(1);
        const copy = (copies[0] as { seq: number }).seq;
        for (const result of results.filter((r) => !('seq' in r)))
          expect(result).toEqual({ refused: 'requeued', copy });
        expect((await store.pendingEvents(MAIN, 10)).map((e) => e.seq)).toEqual([copy]);
      });

      it('a later event with the same text, source and action is not taken for a requeued copy', async () => {
        const notice = { sessionKey: MAIN, text: 'mailbox watch renewed', source: 'gmail' };
        const seq = await setAsideEvent({ ...notice, trusted: true });
        // The same notice again, written by hookgate itself: not a copy of the set-aside one.
        await store.addEvent({ ...notice, trusted: true });
        const [again] = await store.pendingEvents(MAIN, 10);
        const requeued = await store.requeueEvent(seq);
        expect(requeued).toEqual({ seq: expect.any(Number) });
        expect(await store.requeueEvent(seq)).toEqual({
          refused: 'requeued',
          copy: (requeued as { seq: number }).seq,
        });
        expect((await store.pendingEvents(MAIN, 10)).map((e) => e.seq)).toEqual([
          again?.seq,
          (requeued as { seq: number }).seq,
        ]);
      });

      it('a second store over the same data reads what the first wrote', async () => {
        const other = await open();
        await store.addEvent({ sessionKey: MAIN, text: 'shared', source: 'test', trusted: true });
        await store.setRoute(MAIN, 'slack', 'U1');
        const seq = await store.request('reload');
        expect((await other.pendingEvents(MAIN, 10)).map((event) => event.text)).toEqual([
          'shared',
        ]);
        expect(await other.lastRoute(MAIN)).toEqual({ channel: 'slack', recipient: 'U1' });
        expect(await other.takeRequests()).toEqual([{ seq, kind: 'reload' }]);
        expect(await store.requestTaken(seq)).toBe(true);
      });
    });

    if (!options.shared) {
      describe('one process owns the store', () => {
        it('always leads', async () => {
          expect(await store.leadership.lead()).toBe(true);
          expect(await store.leadership.lead()).toBe(true);
          await store.leadership.resign();
          expect(await store.leadership.lead()).toBe(true);
        });

        it('at start, takes back every run left running, with its runner group', async () => {
          const a = agentAction('hook:a');
          const b = agentAction('hook:b');
          const c = agentAction('hook:c');
          await env.accept([a, b, c]);
          const [ra, rb, rc] = await claimAll([a, b, c]);
          await store.setRunnerGroup(claimOf(ra as RunRow), 4242);
          // A stale claim records nothing.
          await store.setRunnerGroup({ id: b.id, attempts: 0 }, 999);
          await store.finish(claimOf(rc as RunRow), 'done', { status: 'ok' });
          await store.close();
          opened.splice(opened.indexOf(store), 1);

          // A new process over the same data.
          store = await open();
          const taken = await store.recoverInterrupted();
          expect(taken.sort((x, y) => x.id.localeCompare(y.id))).toEqual(
            [
              { id: a.id, pgid: 4242 },
              { id: b.id, pgid: null },
            ].sort((x, y) => x.id.localeCompare(y.id)),
          );
          expect(await store.run(a.id)).toMatchObject({ state: 'queued', attempts: 1 });
          expect((await store.run(c.id))?.state).toBe('done');
          // The lost claims write nothing; the runs are claimed again.
          expect(await store.finish(claimOf(rb as RunRow), 'done', { status: 'ok' })).toBe(false);
          expect(await store.claimHeads(10, NOBODY)).toMatchObject([
            { id: a.id, attempts: 2 },
            { id: b.id, attempts: 2 },
          ]);
          const again = await store.recoverInterrupted();
          expect(again.map((run) => run.id).sort()).toEqual([a.id, b.id].sort());
        });
      });
    }

    if (options.shared) {
      describe('a second instance over the same store', () => {
        it('leads one at a time; a resignation hands the lead over', async () => {
          const other = await open();
          expect(await store.leadership.lead()).toBe(true);
          expect(await other.leadership.lead()).toBe(false);
          expect(await store.leadership.lead()).toBe(true);
          expect((await other.leaderLease()).kind).toBe('held');
          await store.leadership.resign();
          // Given up, not forgotten: a command asking the leader knows a successor may come.
          expect(await other.leaderLease()).toEqual({ kind: 'lapsed', agoMs: expect.any(Number) });
          expect(await other.leadership.lead()).toBe(true);
          expect(await store.leadership.lead()).toBe(false);
        });

        it('concurrent claims never run two actions of one session', async () => {
          const sessions = ['hook:a', 'hook:b', 'hook:c', 'hook:d'];
          const actions = sessions.flatMap((key) => [agentAction(key), agentAction(key)]);
          await env.accept(actions);
          const other = await open();
          const [mine, theirs] = await Promise.all([
            store.claimHeads(10, NOBODY),
            other.claimHeads(10, NOBODY),
          ]);
          const claimed = [...mine, ...theirs];
          const heads = sessions.map((_, i) => actions[i * 2]?.id);
          expect(ids(claimed).sort()).toEqual(heads.sort());
          expect(await other.claimHeads(10, NOBODY)).toEqual([]);
        });

        it('each request is taken by one instance', async () => {
          const other = await open();
          const asked = [await store.request('heartbeat'), await store.request('reload')];
          const [mine, theirs] = await Promise.all([store.takeRequests(), other.takeRequests()]);
          expect([...mine, ...theirs].map((request) => request.seq).sort()).toEqual(asked.sort());
        });

        it('a starting instance never takes over a live instance’s runs', async () => {
          const action = agentAction('hook:a');
          await env.accept([action]);
          const [row] = await claimAll([action]);
          const other = await open();
          expect(await other.recoverInterrupted()).toEqual([]);
          expect(await other.claimHeads(10, NOBODY)).toEqual([]);
          await store.renewLeases([claimOf(row as RunRow)]);
          expect(await store.finish(claimOf(row as RunRow), 'done', { status: 'ok' })).toBe(true);
          expect((await other.run(action.id))?.state).toBe('done');
        });
      });
    }

    describeClaimProperty(
      () => env,
      () => store,
    );
  });
}

/** The model of one action in the property. */
type Modelled = {
  id: string;
  session: number;
  state: ActionState;
  attempts: number;
  claim?: Claim;
};

const propertyStep = fc.oneof(
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('accept' as const),
      s: fc.nat(1),
      n: fc.integer({ min: 1, max: 2 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('claim' as const),
      room: fc.integer({ min: 1, max: 3 }),
      busy: fc.option(fc.nat(1), { nil: undefined }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('finish' as const),
      pick: fc.nat(),
      state: fc.constantFrom('done', 'failed', 'dead') as fc.Arbitrary<'done' | 'failed' | 'dead'>,
      stale: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('requeue' as const),
      pick: fc.nat(),
      refund: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('retry' as const),
      pick: fc.nat(),
      failed: fc.boolean(),
    }),
  },
);
type PropertyStep = typeof propertyStep extends fc.Arbitrary<infer T> ? T : never;

/**
 * Random accepts, claims, finishes, requeues and retries against a model: a claim returns
 * exactly the oldest unfinished action of each session that has none running (and is not busy),
 * in turn order (a session whose turn ended goes behind the rows stored by then), up to the
 * room.
 */
function describeClaimProperty(current: () => RuntimeStoreEnv, opened: () => RuntimeStore): void {
  describe('claims against a model', () => {
    // One store for every run of the property; each run has sessions of its own and drains them.
    let run = 0;

    /**
     * What claimHeads must return now: heads in turn order, a session's place being its head's
     * position or, once its turn ended, the position after every row stored by then.
     */
    function expected(
      rows: readonly Modelled[],
      places: ReadonlyMap<number, number>,
      room: number,
      busy?: number,
    ): Modelled[] {
      const heads: Array<{ row: Modelled; at: number }> = [];
      const seen = new Set<number>();
      for (const [at, row] of rows.entries()) {
        if (seen.has(row.session) || (row.state !== 'queued' && row.state !== 'running')) continue;
        seen.add(row.session);
        heads.push({ row, at });
      }
      const running = new Set(rows.filter((r) => r.state === 'running').map((r) => r.session));
      const place = (head: { row: Modelled; at: number }) =>
        Math.max(head.at, places.get(head.row.session) ?? -1);
      return heads
        .filter(({ row }) => row.state === 'queued' && !running.has(row.session))
        .filter(({ row }) => row.session !== busy)
        .sort((a, b) => place(a) - place(b) || a.at - b.at)
        .slice(0, room)
        .map(({ row }) => row);
    }

    /** A session's turn ended (a run of it ended, or an ended one was sent back). */
    function endTurn(rows: readonly Modelled[], places: Map<number, number>, session: number) {
      const open = rows.some(
        (r) => r.session === session && (r.state === 'queued' || r.state === 'running'),
      );
      if (open) places.set(session, rows.length);
      else places.delete(session);
    }

    async function apply(
      rows: Modelled[],
      places: Map<number, number>,
      keys: readonly string[],
      step: PropertyStep,
    ) {
      const store = opened();
      const running = rows.filter((row) => row.state === 'running');
      if (step.op === 'accept') {
        const actions = Array.from({ length: step.n }, () =>
          agentAction(keys[step.s] as string, 'property'),
        );
        await current().accept(actions);
        for (const action of actions)
          rows.push({ id: action.id, session: step.s, state: 'queued', attempts: 0 });
      } else if (step.op === 'claim') {
        const want = expected(rows, places, step.room, step.busy);
        const busy = new Set(step.busy === undefined ? [] : [keys[step.busy] as string]);
        const got = await store.claimHeads(step.room, busy);
        expect(ids(got)).toEqual(want.map((row) => row.id));
        for (const [i, row] of want.entries()) {
          row.attempts += 1;
          expect(got[i]).toMatchObject({ state: 'running', attempts: row.attempts });
          Object.assign(row, { state: 'running', claim: claimOf(got[i] as RunRow) });
        }
      } else if (step.op === 'finish') {
        const row = running[step.pick % Math.max(1, running.length)];
        if (!row?.claim) return;
        const claim = step.stale ? { ...row.claim, attempts: row.claim.attempts - 1 } : row.claim;
        expect(await store.finish(claim, step.state, { status: 'ok' })).toBe(!step.stale);
        if (!step.stale) {
          row.state = step.state;
          endTurn(rows, places, row.session);
        }
      } else if (step.op === 'requeue') {
        const row = running[step.pick % Math.max(1, running.length)];
        if (!row?.claim) return;
        const options = { refundAttempt: step.refund };
        expect(await store.requeue(row.claim, 0, { status: 'retrying' }, options)).toBe(true);
        Object.assign(row, { state: 'queued', attempts: row.attempts - (step.refund ? 1 : 0) });
      } else {
        // Among the ended ones: a retry of a queued or running action is rare in practice.
        const ended = rows.filter((row) => row.state !== 'queued' && row.state !== 'running');
        const row = ended[step.pick % Math.max(1, ended.length)];
        if (!row) return;
        const retried = row.state === 'dead' || (step.failed && row.state === 'failed');
        expect(await store.retryDead(row.id, { failed: step.failed })).toBe(retried);
        if (retried) {
          Object.assign(row, { state: 'queued', attempts: 0 });
          endTurn(rows, places, row.session);
        }
      }
    }

    /** Finish everything a run left unfinished, so the next run starts from an idle queue. */
    async function drain(rows: readonly Modelled[]) {
      const store = opened();
      for (const row of rows)
        if (row.state === 'running' && row.claim)
          await store.finish(row.claim, 'done', { status: 'ok' });
      for (;;) {
        const claimed = await store.claimHeads(100, NOBODY);
        if (claimed.length === 0) return;
        for (const row of claimed) await store.finish(claimOf(row), 'done', { status: 'ok' });
      }
    }

    // Each run starts with a backlog (one accept), then goes on at random.
    const backlog = fc.array(fc.nat(1), { minLength: 1, maxLength: 6 });
    const steps = fc.array(propertyStep, { minLength: 4, maxLength: 30, size: 'max' });
    test.prop([backlog, steps], { numRuns: 30 })(
      'claimHeads returns each idle session’s oldest unfinished action in turn order, never one of a session with a running action',
      async (initial, steps) => {
        const store = opened();
        run += 1;
        const keys = [0, 1].map((s) => `hook:prop-${run}-${s}`);
        const rows: Modelled[] = [];
        const places = new Map<number, number>();
        try {
          const actions = initial.map((s) => agentAction(keys[s] as string, 'backlog'));
          await current().accept(actions);
          for (const [i, action] of actions.entries())
            rows.push({ id: action.id, session: initial[i] ?? 0, state: 'queued', attempts: 0 });
          for (const step of steps) {
            await apply(rows, places, keys, step);
            const states = await store.states(rows.map((row) => row.id));
            expect(Object.fromEntries(states)).toEqual(
              Object.fromEntries(rows.map((row) => [row.id, row.state])),
            );
            expect(await store.hasRunnable()).toBe(expected(rows, places, 1).length > 0);
          }
        } finally {
          await drain(rows);
        }
      },
      // Each accept is a durable commit: generous on a loaded machine.
      180_000,
    );
  });
}

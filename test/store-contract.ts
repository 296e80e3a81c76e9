/**
 * The contract every ActionStore implementation passes: durable appends,
 * idempotency records, listing newest first. Run by each backend's test file.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { ActionStore } from '../engine/queue/action-store.ts';
import { wrapUntrusted } from '../engine/safety.ts';
import type { Action } from '../schemas/action.ts';

/** A valid wake action with a fresh id, wrapped as the /wake trigger wraps it. */
export function sampleAction(text = 'hello'): Action {
  const wrapped = wrapUntrusted(text, 'Webhook');
  return {
    kind: 'wake',
    id: randomUUID(),
    hook: 'wake',
    receivedAt: new Date().toISOString(),
    client: '127.0.0.1',
    requestId: randomUUID(),
    untrusted: true,
    prompt: wrapped.text,
    safety: {
      wrapperId: wrapped.id,
      label: 'Webhook',
      patterns: wrapped.patterns,
      neutralised: wrapped.neutralised,
    },
    text,
    mode: 'now',
  };
}

/** A key's record as a request stores it (live from the start of time unless told otherwise). */
function keyRecord(key: string, actionId: string, createdAtMs: number) {
  return {
    key,
    fingerprint: `fp-${key}`,
    actionId,
    response: `{"ok":true,"id":"${actionId}"}`,
    createdAtMs,
    notBeforeMs: 0,
  };
}

function withoutWindow({ notBeforeMs: _window, ...record }: ReturnType<typeof keyRecord>) {
  return record;
}

/** Register the shared suite for a store factory; `reopen` gives a new store over the same data. */
export function describeActionStore(
  name: string,
  factory: () => { open: () => Promise<ActionStore>; cleanup: () => void },
): void {
  describe(`ActionStore contract: ${name}`, () => {
    let env: { open: () => Promise<ActionStore>; cleanup: () => void };
    const opened: ActionStore[] = [];
    const open = async () => {
      const store = await env.open();
      opened.push(store);
      return store;
    };
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
      env.cleanup();
    });

    it('keeps appended actions across a reopen, newest first', async () => {
      env = factory();
      const store = await open();
      const actions = [sampleAction('one'), sampleAction('two'), sampleAction('three')];
      for (const action of actions) await store.appendOrGet({ actions: [action] });
      await store.close();
      const listed = await (await open()).listActions({ limit: 10 });
      expect(listed.map((row) => row.action)).toEqual(actions.reverse());
      expect(listed.every((row) => row.state === 'queued' && row.attempts === 0)).toBe(true);
    });

    it('commits concurrent appends, each resolving only once stored', async () => {
      env = factory();
      const store = await open();
      const actions = Array.from({ length: 200 }, (_, i) => sampleAction(`n${i}`));
      await Promise.all(actions.map((action) => store.appendOrGet({ actions: [action] })));
      expect(await store.listActions({ limit: 1000 })).toHaveLength(200);
    });

    it('refuses a duplicate action id without losing the rest of the batch', async () => {
      env = factory();
      const store = await open();
      const dup = sampleAction();
      const results = await Promise.allSettled([
        store.appendOrGet({ actions: [dup] }),
        store.appendOrGet({ actions: [{ ...dup }] }),
        store.appendOrGet({ actions: [sampleAction()] }),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect(await store.listActions({ limit: 10 })).toHaveLength(2);
    });

    it('stores the actions of one request all or nothing', async () => {
      env = factory();
      const store = await open();
      const existing = sampleAction('existing');
      await store.appendOrGet({ actions: [existing] });
      const fresh = sampleAction('fresh');
      await expect(store.appendOrGet({ actions: [fresh, { ...existing }] })).rejects.toThrow();
      await store.appendOrGet({ actions: [sampleAction('a'), sampleAction('b')] });
      const texts = (await store.listActions({ limit: 10 })).map(
        (row) => (row.action as { text: string }).text,
      );
      expect(texts).toEqual(['b', 'a', 'existing']);
    });

    it('stores idempotency records with their action and finds them within the window', async () => {
      env = factory();
      const store = await open();
      const action = sampleAction();
      const record = {
        key: 'k',
        fingerprint: 'f',
        actionId: action.id,
        response: '{"ok":true}',
        createdAtMs: 1000,
      };
      const second = { ...record, key: 'k2' };
      const keys = [record, second].map((key) => ({ ...key, notBeforeMs: 0 }));
      expect(await store.appendOrGet({ actions: [action], idempotency: keys })).toEqual({
        stored: true,
      });
      expect(await store.findIdempotency('k', 500)).toEqual(record);
      expect(await store.findIdempotency('k2', 500)).toEqual(second);
      expect(await store.findIdempotency('k', 1001)).toBeUndefined();
      expect(await store.findIdempotency('other', 0)).toBeUndefined();
      expect(await store.pruneIdempotency(2000)).toBe(2);
      expect(await store.findIdempotency('k', 0)).toBeUndefined();
    });

    it('stores nothing for a key already held and returns the first record instead', async () => {
      env = factory();
      const store = await open();
      const first = sampleAction('first');
      const record = keyRecord('held', first.id, 5000);
      await store.appendOrGet({ actions: [first], idempotency: [record] });
      const repeat = sampleAction('repeat');
      const outcome = await store.appendOrGet({
        actions: [repeat],
        idempotency: [keyRecord('fresh', repeat.id, 6000), keyRecord('held', repeat.id, 6000)],
      });
      expect(outcome).toEqual({ stored: false, previous: withoutWindow(record) });
      const listed = await store.listActions({ limit: 10 });
      expect(listed.map((row) => row.action.id)).toEqual([first.id]);
      // Nothing of the refused request was kept, not even its other key.
      expect(await store.findIdempotency('fresh', 0)).toBeUndefined();
    });

    it('gives one of many concurrent requests with the same key the store, the rest its record', async () => {
      env = factory();
      const store = await open();
      const actions = Array.from({ length: 20 }, (_, i) => sampleAction(`racer ${i}`));
      const outcomes = await Promise.all(
        actions.map((action) =>
          store.appendOrGet({ actions: [action], idempotency: [keyRecord('race', action.id, 1)] }),
        ),
      );
      const stored = outcomes.filter((outcome) => outcome.stored);
      expect(stored).toHaveLength(1);
      const listed = await store.listActions({ limit: 100 });
      expect(listed).toHaveLength(1);
      for (const outcome of outcomes) {
        if (!outcome.stored) expect(outcome.previous.actionId).toBe(listed[0]?.action.id);
      }
    });

    it('replaces a key whose record is older than the request allows', async () => {
      env = factory();
      const store = await open();
      const old = sampleAction('old');
      await store.appendOrGet({ actions: [old], idempotency: [keyRecord('aging', old.id, 1000)] });
      const later = sampleAction('later');
      const record = { ...keyRecord('aging', later.id, 9000), notBeforeMs: 5000 };
      expect(await store.appendOrGet({ actions: [later], idempotency: [record] })).toEqual({
        stored: true,
      });
      expect((await store.findIdempotency('aging', 0))?.actionId).toBe(later.id);
      expect(await store.listActions({ limit: 10 })).toHaveLength(2);
    });

    it('rejects appends after close', async () => {
      env = factory();
      const store = await open();
      await store.close();
      await expect(store.appendOrGet({ actions: [sampleAction()] })).rejects.toThrow();
    });
  });
}

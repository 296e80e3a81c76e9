/**
 * Attack: one wake whose text the agent's provider always refuses (a content
 * filter answering 400 to it, a final error) was enough to hold the main
 * session: its heartbeat failed, the event stayed pending, and every later
 * heartbeat took the same oldest events first and failed too, so no other
 * event ever reached the agent. The refused batch is now narrowed to that
 * event, which is held out and set aside once refused alone again after a
 * heartbeat without it was answered; an outage (every turn refused) sets
 * nothing aside. End to end over an http runner, on each store backend.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BACKEND_START_MS, type Backend, storeBackends } from './helpers/backends.ts';
import {
  type RunInput,
  startWorld,
  type World,
  type WorldOptions,
} from './helpers/main-session.ts';
import { waitFor } from './helpers/runtime.ts';
import { eventsOf, heartbeatsOf } from './helpers/store-reads.ts';

const POISON = 'zq-refused-by-the-provider';
const worlds: World[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) await world.close();
});

async function world(backend: Backend, options: WorldOptions): Promise<World> {
  const store = await backend.store();
  const started = await startWorld({ ...(store && { store }), ...options });
  worlds.push(started);
  return started;
}

/** A provider that refuses for good any heartbeat carrying the poisoned text. */
const contentFilter = (run: RunInput) =>
  run.kind === 'heartbeat' && run.message.includes(POISON)
    ? { status: 400, body: { error: 'content filter: request refused' } }
    : { body: { reply: run.kind === 'heartbeat' ? 'HEARTBEAT_OK' : 'done' } };

const answeredTexts = (w: World, texts: readonly string[]) =>
  texts.filter((text) => w.runs().some((run) => run.message.includes(text)));

for (const backend of storeBackends()) {
  describe.skipIf(backend.skip)(`on ${backend.name}`, () => {
    beforeAll(() => backend.start(), BACKEND_START_MS);

    it('one wake the provider always refuses does not hold the main session', async () => {
      const w = await world(backend, { runner: contentFilter });
      const texts = Array.from({ length: 6 }, (_, i) => `ordinary event ${i}`);
      // The poisoned wake among ordinary ones; only the last asks for a heartbeat now.
      await w.post('wake', { text: texts[0], mode: 'next-heartbeat' });
      await w.post('wake', { text: texts[1], mode: 'next-heartbeat' });
      await w.post('wake', { text: `please summarise ${POISON}`, mode: 'next-heartbeat' });
      for (const text of texts.slice(2, -1)) await w.post('wake', { text, mode: 'next-heartbeat' });
      await w.post('wake', { text: texts.at(-1), mode: 'now' });
      // Consumed, and each heartbeat that consumed one ended (on PostgreSQL its end can be read
      // a moment after its events' consumption).
      const { events, byId } = await waitFor(
        'no event left pending, each heartbeat that took one ended',
        async () => {
          const all = await eventsOf(w.server);
          if (!all.every((event) => event.consumedBy !== null)) return false;
          const beats = new Map((await heartbeatsOf(w.server)).map((beat) => [beat.id, beat]));
          const ended = all.every((event) =>
            ['done', 'failed'].includes(beats.get(String(event.consumedBy))?.state ?? ''),
          );
          return ended && { events: all, byId: beats };
        },
        30_000,
      );
      const poisoned = events.find((event) => event.text.includes(POISON));
      // Set aside: consumed by a failed heartbeat that says so, its text kept.
      const aside = byId.get(String(poisoned?.consumedBy));
      expect(aside?.state).toBe('failed');
      expect(aside?.error).toMatch(/^event set aside .*content filter/);
      // Every other event was consumed by a heartbeat the agent answered.
      for (const event of events.filter((e) => e !== poisoned)) {
        expect(byId.get(String(event.consumedBy))?.state, event.text).toBe('done');
      }
      expect(answeredTexts(w, texts)).toEqual(texts);
      // The agent never answered a turn that carried it.
      const carried = w.runs().filter((run) => run.message.includes(POISON));
      expect(carried.length).toBeGreaterThanOrEqual(2);
      for (const run of carried) expect(byId.get(run.runId)?.state).toBe('failed');
    });

    it('an outage that refuses every turn sets nothing aside', async () => {
      const w = await world(backend, {
        runner: (run) =>
          run.kind === 'heartbeat'
            ? { status: 400, body: { error: 'invalid api key' } }
            : { body: { reply: 'done' } },
      });
      for (let i = 0; i < 4; i++)
        await w.post('wake', { text: `event ${i}`, mode: 'next-heartbeat' });
      await w.post('wake', { text: 'event 4', mode: 'now' });
      // The narrowing ends with a turn without events (the prompt alone), refused as well.
      await waitFor(
        'a refused heartbeat without events',
        async () =>
          (await heartbeatsOf(w.server)).some(
            (beat) => beat.state === 'failed' && beat.events === 0,
          ),
        30_000,
      );
      const events = await eventsOf(w.server);
      expect(events).toHaveLength(5);
      expect(events.every((event) => event.consumedBy === null)).toBe(true);
      const heartbeats = await heartbeatsOf(w.server);
      expect(heartbeats.every((beat) => beat.state === 'failed')).toBe(true);
      expect(heartbeats.some((beat) => beat.error?.includes('set aside'))).toBe(false);
    });
  });
}

/**
 * A heartbeat takes at most a batch of pending events; a wake that asked for
 * a heartbeat now behind more than a batch of older events is not left for
 * the next scheduled check (here: never, the schedule is off). The heartbeat
 * that had no room for every pending event is followed by another at once,
 * until none is pending; one that had room is not followed by an empty one.
 * On each store backend, through the HTTP API and the runner's endpoint.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BACKEND_START_MS, storeBackends } from './helpers/backends.ts';
import { type RunInput, startWorld, type World } from './helpers/main-session.ts';
import { waitFor } from './helpers/runtime.ts';
import { eventsOf, heartbeatsOf } from './helpers/store-reads.ts';

// The runtime's batch: the most events one heartbeat sends.
const BATCH = 100;

const worlds: World[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) await world.close();
});

/** Wakes that wait for the next heartbeat, posted a few at a time. */
async function quietWakes(w: World, count: number): Promise<void> {
  for (let i = 0; i < count; i += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, count - i) }, (_, j) =>
        w.post('wake', { text: `queued ${i + j}`, mode: 'next-heartbeat' }),
      ),
    );
  }
}

const systemLines = (run: RunInput) =>
  run.message.split('\n').filter((line) => line.startsWith('System:')).length;
const heartbeatRuns = (w: World) => w.runs().filter((run) => run.kind === 'heartbeat');

for (const backend of storeBackends()) {
  describe.skipIf(backend.skip)(`on ${backend.name}`, () => {
    beforeAll(() => backend.start(), BACKEND_START_MS);

    it('a wake asking for a heartbeat now behind more than a batch of pending events reaches the agent without waiting for the schedule', async () => {
      const store = await backend.store();
      const w = await startWorld(store ? { store } : {});
      worlds.push(w);
      await quietWakes(w, BATCH + 40);
      expect(heartbeatRuns(w)).toEqual([]);

      await w.post('wake', { text: 'Deploy failed: look now', mode: 'now' });
      const sent = await waitFor(
        'the now wake to reach a heartbeat',
        () => {
          const found = heartbeatRuns(w).find((run) => run.message.includes('Deploy failed'));
          return found && heartbeatRuns(w);
        },
        30_000,
      );
      // The oldest batch first, then the rest with the wake that asked: every event once.
      expect(sent).toHaveLength(2);
      expect(sent.map(systemLines)).toEqual([BATCH, 41]);
      await waitFor(
        'both heartbeats recorded',
        async () =>
          (await heartbeatsOf(w.server)).filter((row) => row.state === 'done').length === 2,
        30_000,
      );
      const events = await eventsOf(w.server);
      expect(events).toHaveLength(BATCH + 41);
      expect(events.filter((event) => event.consumedBy === null)).toEqual([]);
    });

    it('a heartbeat that had room for every pending event is not followed by an empty one', async () => {
      const store = await backend.store();
      const w = await startWorld(store ? { store } : {});
      worlds.push(w);
      await quietWakes(w, BATCH - 1);
      await w.post('wake', { text: 'One more, now', mode: 'now' });
      await waitFor(
        'the heartbeat recorded',
        async () => (await heartbeatsOf(w.server)).some((row) => row.state === 'done'),
        30_000,
      );
      await w.post('wake', { text: 'Later, now', mode: 'now' });
      await waitFor(
        'the later wake to reach a heartbeat',
        () => heartbeatRuns(w).some((run) => run.message.includes('Later, now')),
        30_000,
      );
      // A heartbeat sent without events (a follow-up to a batch that had room) would show here.
      expect(heartbeatRuns(w).map(systemLines)).toEqual([BATCH, 1]);
    });
  });
}

/**
 * Session history belongs to an agent and a session key (and the owner's
 * heartbeat keeps its own): a caller who picks a session key reads only what
 * the same agent said in that session. Stores from before are migrated at
 * open, each old turn kept with the agent that wrote it. The history tests
 * run on each store backend; the migration is the SQLite store's.
 */
import { DatabaseSync } from 'node:sqlite';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { STORE_FILE } from '../engine/store/sqlite/schema.ts';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { BACKEND_START_MS, storeBackends } from './helpers/backends.ts';
import { type RunInput, startWorld, type World } from './helpers/main-session.ts';
import { waitFor } from './helpers/runtime.ts';
import { BACK_TO_VERSION_12 } from './helpers/schema-version-12.ts';
import { heartbeatsOf, waitForRun } from './helpers/store-reads.ts';

const worlds: World[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) await world.close();
});

async function world(
  options: { store?: Record<string, unknown>; prepare?: (dir: string) => void } = {},
): Promise<World> {
  const { store, prepare } = options;
  const started = await startWorld({
    ...(store && { store }),
    runner: (run) => ({
      body: { reply: run.kind === 'heartbeat' ? `beat ${run.runId}` : `reply to ${run.runId}` },
    }),
    ...(prepare && { prepare }),
  });
  worlds.push(started);
  return started;
}

/** Run one hook turn (nothing delivered) and return what its runner was given. */
async function turn(w: World, body: Record<string, unknown>): Promise<RunInput> {
  const json = await w.post('agent', { deliver: false, wakeMode: 'next-heartbeat', ...body });
  const id = String(json['runId']);
  await waitForRun(w.server, id, 30_000, ['done']);
  return w.runs().find((run) => run.runId === id) as RunInput;
}

/** Run one heartbeat and return what its runner was given. */
async function beat(w: World): Promise<RunInput> {
  const before = (await heartbeatsOf(w.server)).length;
  await w.post('wake', { text: 'tick', mode: 'now' });
  const row = await waitFor(
    'the heartbeat',
    async () => (await heartbeatsOf(w.server)).filter((r) => r.state === 'done')[before],
    30_000,
  );
  return w.runs().find((run) => run.runId === row.id) as RunInput;
}

for (const backend of storeBackends()) {
  describe.skipIf(backend.skip)(`on ${backend.name}`, () => {
    beforeAll(() => backend.start(), BACKEND_START_MS);

    describe('an ack-only heartbeat', () => {
      it('is recorded but kept out of history: the next heartbeat is not sent its events again', async () => {
        let beats = 0;
        const w = await startWorld({
          store: await backend.store(),
          runner: (run) => {
            if (run.kind !== 'heartbeat') return { body: { reply: 'done' } };
            beats++;
            return { body: { reply: beats === 2 ? 'the deploy needs a look' : 'HEARTBEAT_OK' } };
          },
        });
        worlds.push(w);
        const acked = await beat(w);
        const answered = await beat(w);
        expect(answered.history).toEqual([]);
        const next = await beat(w);
        expect(next.history).toEqual([
          { role: 'user', text: answered.message },
          { role: 'assistant', text: 'the deploy needs a look' },
        ]);
        const record = (await heartbeatsOf(w.server)).find((row) => row.id === acked.runId);
        expect(record).toMatchObject({ state: 'done', reply: 'HEARTBEAT_OK', events: 1 });
      });
    });

    describe('history is keyed by agent and session key', () => {
      it("agent ops cannot read agent main's turns through the same session key", async () => {
        const w = await world({ store: await backend.store() });
        const first = await turn(w, {
          agentId: 'main',
          sessionKey: 'hook:shared',
          message: 'plan A',
        });
        const ops = await turn(w, { agentId: 'ops', sessionKey: 'hook:shared', message: 'what?' });
        expect(ops.history).toEqual([]);
        const again = await turn(w, {
          agentId: 'main',
          sessionKey: 'hook:shared',
          message: 'and?',
        });
        expect(again.history).toEqual([
          { role: 'user', text: first.message },
          { role: 'assistant', text: `reply to ${first.runId}` },
        ]);
        const opsAgain = await turn(w, { agentId: 'ops', sessionKey: 'hook:shared', message: 'x' });
        expect(opsAgain.history.map((t) => t.text)).toEqual([ops.message, `reply to ${ops.runId}`]);
      });

      it("a hook run on the main session key neither reads the heartbeat's turns nor feeds them", async () => {
        const w = await world({ store: await backend.store() });
        const first = await beat(w);
        const hook = await turn(w, { agentId: 'main', sessionKey: 'main', message: 'tell me' });
        expect(hook.history).toEqual([]);
        const second = await beat(w);
        expect(second.history).toEqual([
          { role: 'user', text: first.message },
          { role: 'assistant', text: `beat ${first.runId}` },
        ]);
      });
    });
  });
}

/** Turn a fresh store back into the shape before history had an owner, with old rows. */
function oldStore(dir: string): void {
  SqliteRuntimeStore.open(dir).close();
  const db = new DatabaseSync(path.join(dir, STORE_FILE));
  const action = (id: string, agentId: string) =>
    JSON.stringify({ kind: 'agent', id, agentId, sessionKey: 'hook:old', message: 'm' });
  db.exec(BACK_TO_VERSION_12);
  db.exec(`
    DROP INDEX session_turns_owner;
    ALTER TABLE session_turns DROP COLUMN agent_id;
    ALTER TABLE session_turns DROP COLUMN kind;
    CREATE INDEX session_turns_key ON session_turns (session_key, seq);
    PRAGMA user_version = 2;
  `);
  const insertAction = db.prepare(
    "INSERT INTO actions (id, kind, hook, session_key, state, received_at, action) VALUES (?, 'agent', 'agent', 'hook:old', 'done', '2026-01-01T00:00:00Z', ?)",
  );
  insertAction.run('old-ops', action('old-ops', 'ops'));
  insertAction.run('old-main', action('old-main', 'main'));
  db.prepare(
    "INSERT INTO heartbeats (id, reason, state, started_at) VALUES ('old-beat', 'periodic', 'done', '2026-01-01T00:00:00Z')",
  ).run();
  const insertTurn = db.prepare(
    "INSERT INTO session_turns (session_key, role, text, run_id, created_at) VALUES (?, ?, ?, ?, '2026-01-01T00:00:00Z')",
  );
  for (const [key, run] of [
    ['hook:old', 'old-ops'],
    ['hook:old', 'old-main'],
    ['hook:old', 'no-such-run'],
    ['main', 'old-beat'],
  ] as const) {
    insertTurn.run(key, 'user', `asked in ${run}`, run);
    insertTurn.run(key, 'assistant', `answered in ${run}`, run);
  }
  db.close();
}

describe('migrating a store from before', () => {
  it('each old turn stays with the agent that wrote it; a turn of an unknown run with nobody', async () => {
    const w = await world({ prepare: oldStore });
    expect(
      w.rows(
        "SELECT run_id, agent_id, kind FROM session_turns WHERE created_at < '2027' GROUP BY run_id ORDER BY min(seq)",
      ),
    ).toEqual([
      { run_id: 'old-ops', agent_id: 'ops', kind: 'agent' },
      { run_id: 'old-main', agent_id: 'main', kind: 'agent' },
      { run_id: 'no-such-run', agent_id: '', kind: 'agent' },
      { run_id: 'old-beat', agent_id: 'main', kind: 'heartbeat' },
    ]);
    const ops = await turn(w, { agentId: 'ops', sessionKey: 'hook:old', message: 'x' });
    expect(ops.history.map((t) => t.text)).toEqual(['asked in old-ops', 'answered in old-ops']);
    const main = await turn(w, { agentId: 'main', sessionKey: 'hook:old', message: 'x' });
    expect(main.history.map((t) => t.text)).toEqual(['asked in old-main', 'answered in old-main']);
    const heartbeat = await beat(w);
    expect(heartbeat.history.map((t) => t.text)).toEqual([
      'asked in old-beat',
      'answered in old-beat',
    ]);
  });
});

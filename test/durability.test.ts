/**
 * Durable acceptance of the real server process: SIGKILL under concurrent
 * load loses no action that was answered 200, and idempotency keys survive
 * a restart.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Action } from '../schemas/action.ts';
import {
  type Exit,
  listStoredActions,
  postHook,
  type RunningServer,
  startServer,
  useProcessFixtures,
  writeConfig,
} from './helpers/process.ts';

const TOKEN = 'tok-durability-0123456789';

const temp = useProcessFixtures();

/** A config file in a fresh directory, data in ./data next to it. */
function configFile(): { file: string; dataDir: string } {
  const dir = temp();
  const file = writeConfig(
    dir,
    `server:
  host: 127.0.0.1
  port: 0
hooks:
  enabled: true
  token: ${TOKEN}
runtime:
  dataDir: ./data
`,
  );
  return { file, dataDir: path.join(dir, 'data') };
}

async function stopWith(server: RunningServer, signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
  server.child.kill(signal);
  const exit = await server.waitForExit();
  expect(exit).toEqual(signal === 'SIGTERM' ? { code: 0, signal: null } : { code: null, signal });
}

/** Every row of the actions table, newest first, read with node:sqlite. */
function tableRows(dataDir: string): Array<{ id: string; state: string; action: Action }> {
  const db = new DatabaseSync(path.join(dataDir, 'hookgate.db'), { readOnly: true });
  try {
    const rows = db.prepare('SELECT id, state, action FROM actions ORDER BY seq DESC').all();
    return rows.map((row) => ({
      id: String(row['id']),
      state: String(row['state']),
      action: JSON.parse(String(row['action'])) as Action,
    }));
  } finally {
    db.close();
  }
}

describe('SIGKILL under concurrent load', () => {
  const LOOPS = 32;
  const MAX_REQUESTS = 3_000;
  const KILL_AFTER = 400;
  let file: string;
  let dataDir: string;
  /** id or runId of every 200 → what was sent. */
  const answered = new Map<string, { kind: 'wake' | 'agent'; text: string }>();
  let refused = 0;
  let failed = 0;
  let exit: Exit;

  beforeAll(async () => {
    ({ file, dataDir } = configFile());
    const server = await startServer(['--config', file]);
    let started = 0;

    async function loop(n: number): Promise<void> {
      for (let i = 0; started < MAX_REQUESTS; i++) {
        started++;
        const kind = (n + i) % 2 === 0 ? 'wake' : 'agent';
        const text = `load-${n}-${i}-end`;
        try {
          const res = await postHook(
            server.url,
            kind,
            kind === 'wake' ? { text } : { message: text },
            { token: TOKEN },
          );
          const body = (await res.json()) as Record<string, unknown>;
          if (res.status !== 200) {
            refused++;
            continue;
          }
          answered.set(String(kind === 'wake' ? body['id'] : body['runId']), { kind, text });
        } catch {
          // The connection died with the server; nothing was answered.
          failed++;
          return;
        }
      }
    }

    const loops = Array.from({ length: LOOPS }, (_, n) => loop(n));
    const deadline = Date.now() + 8_000;
    while (answered.size < KILL_AFTER && started < MAX_REQUESTS && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    server.child.kill('SIGKILL');
    await Promise.all(loops);
    exit = await server.waitForExit();
  }, 30_000);

  it('the kill came mid-load, after many 200s', () => {
    expect(exit.signal).toBe('SIGKILL');
    expect(answered.size).toBeGreaterThanOrEqual(100);
    // Requests were in flight when the process died.
    expect(failed).toBeGreaterThan(0);
    expect(refused).toBe(0);
  });

  it('every action answered 200 is in the actions table, as sent', () => {
    const rows = tableRows(dataDir);
    const byId = new Map(rows.map((row) => [row.id, row]));
    const missing = [...answered.keys()].filter((id) => !byId.has(id));
    expect(missing).toEqual([]);
    for (const [id, { kind, text }] of answered) {
      const row = byId.get(id);
      expect(row?.state).toMatch(/^(queued|running|done|failed)$/);
      expect(row?.action).toMatchObject(
        kind === 'wake'
          ? { kind, id, text: expect.stringContaining(text) }
          : { kind, id, message: expect.stringContaining(text) },
      );
    }
  });

  it('every wake answered 200 has its event in the main session (applied in its acceptance transaction)', () => {
    const db = new DatabaseSync(path.join(dataDir, 'hookgate.db'), { readOnly: true });
    let withEvent: Set<string>;
    try {
      const rows = db
        .prepare(
          "SELECT action_id FROM system_events WHERE source = 'wake' AND session_key = 'main'",
        )
        .all();
      withEvent = new Set(rows.map((row) => String(row['action_id'])));
    } finally {
      db.close();
    }
    const wakes = [...answered].filter(([, { kind }]) => kind === 'wake').map(([id]) => id);
    expect(wakes.length).toBeGreaterThan(0);
    expect(wakes.filter((id) => !withEvent.has(id))).toEqual([]);
  });

  it('actions --json (the operator view) lists every one of them', async () => {
    const rows = tableRows(dataDir);
    const listed = await listStoredActions(['--limit', '1000000', '--data-dir', dataDir]);
    expect(listed.length).toBe(rows.length);
    expect(listed.map((action) => action['id'])).toEqual(rows.map((row) => row.id));
    const ids = new Set(listed.map((action) => action['id']));
    expect([...answered.keys()].filter((id) => !ids.has(id))).toEqual([]);
  });

  it('a server restarted on the same data accepts new requests and keeps the old ones', async () => {
    const before = tableRows(dataDir).length;
    const restarted = await startServer(['--config', file]);
    const res = await postHook(
      restarted.url,
      'wake',
      { text: 'after the crash' },
      { token: TOKEN },
    );
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    const agent = await postHook(restarted.url, 'agent', { message: 'also' }, { token: TOKEN });
    expect(agent.status).toBe(200);
    const { runId } = (await agent.json()) as { runId: string };
    await stopWith(restarted, 'SIGTERM');
    const after = tableRows(dataDir);
    expect(after).toHaveLength(before + 2);
    expect(after.slice(0, 2).map((row) => row.id)).toEqual([runId, id]);
    const listed = await listStoredActions(['--limit', '2', '--data-dir', dataDir]);
    expect(listed.map((action) => action['id'])).toEqual([runId, id]);
  });
});

describe('idempotency across a restart', () => {
  it.each(['SIGTERM', 'SIGKILL'] as const)(
    'a key answered before %s replays after it',
    async (signal) => {
      const { file, dataDir } = configFile();
      const keyed = { token: TOKEN, headers: { 'idempotency-key': 'k1' } };
      const payload = JSON.stringify({ text: 'deploy done', mode: 'now' });

      const first = await startServer(['--config', file]);
      const res1 = await postHook(first.url, 'wake', payload, keyed);
      expect(res1.status).toBe(200);
      const body1 = await res1.text();
      const { id } = JSON.parse(body1) as { id: string };
      await stopWith(first, signal);

      const second = await startServer(['--config', file]);
      const replay = await postHook(second.url, 'wake', payload, keyed);
      expect(replay.status).toBe(200);
      expect(await replay.text()).toBe(body1);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');

      // Key order does not make it a different request.
      const reordered = await postHook(
        second.url,
        'wake',
        { mode: 'now', text: 'deploy done' },
        keyed,
      );
      expect(reordered.status).toBe(200);
      expect(((await reordered.json()) as { id: string }).id).toBe(id);

      const otherPayload = await postHook(second.url, 'wake', { text: 'something else' }, keyed);
      expect(otherPayload.status).toBe(409);
      expect(((await otherPayload.json()) as { error: { code: string } }).error.code).toBe(
        'idempotency_conflict',
      );
      const otherHook = await postHook(second.url, 'agent', { message: 'deploy done' }, keyed);
      expect(otherHook.status).toBe(409);
      expect(((await otherHook.json()) as { error: { code: string } }).error.code).toBe(
        'idempotency_conflict',
      );
      await stopWith(second, 'SIGTERM');

      const stored = await listStoredActions(['--data-dir', dataDir]);
      expect(stored).toHaveLength(1);
      expect(stored[0]).toMatchObject({
        id,
        kind: 'wake',
        text: expect.stringContaining('deploy done'),
      });
    },
  );
});

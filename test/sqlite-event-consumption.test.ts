/**
 * The SQLite store records what a heartbeat consumed as a range of its
 * session's events. A store file from before keeps what its heartbeats
 * consumed event by event, and what was pending stays pending.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { STORE_FILE } from '../engine/store/sqlite/schema.ts';
import { tempDir } from './helpers/hookgate.ts';
import { BACK_TO_VERSION_12 } from './helpers/schema-version-12.ts';

const MAIN = 'agent:main:main';
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('a store file from before consumption ranges', () => {
  it('keeps its consumed events consumed and its pending ones pending; later heartbeats consume as before', async () => {
    const { dir, cleanup } = tempDir('hookgate-event-consumption-');
    cleanups.push(cleanup);
    const store = SqliteRuntimeStore.open(dir);
    for (const text of ['old1', 'old2', 'old3']) {
      await store.addEvent({ sessionKey: MAIN, text, source: 'wake', trusted: true });
    }
    await store.close();
    // As the previous version left it: the first two marked one by one, no range table.
    const db = new DatabaseSync(path.join(dir, STORE_FILE));
    db.exec(BACK_TO_VERSION_12);
    db.exec(`
      INSERT INTO heartbeats (id, reason, state, started_at, events) VALUES ('hb-old', 'wake', 'done', '2026-01-01T00:00:00.000Z', 2);
      UPDATE system_events SET consumed_by = 'hb-old' WHERE text IN ('old1', 'old2');
      DROP TABLE event_consumption;
      PRAGMA user_version = 8;
    `);
    db.close();

    const reopened = SqliteRuntimeStore.open(dir);
    cleanups.push(() => reopened.close());
    const pending = await reopened.pendingEvents(MAIN, 10);
    expect(pending.map((event) => event.text)).toEqual(['old3']);
    await reopened.addEvent({ sessionKey: MAIN, text: 'new1', source: 'wake', trusted: true });
    const included = await reopened.pendingEvents(MAIN, 10);
    const beat = await reopened.startHeartbeat('wake');
    await reopened.finishHeartbeat(beat, {
      state: 'done',
      events: included.map((event) => event.seq),
      reply: 'HEARTBEAT_OK',
      ack: true,
    });
    expect(await reopened.pendingEvents(MAIN, 10)).toEqual([]);
    expect(
      (await reopened.events(MAIN, 10)).map((event) => [event.text, event.consumedBy]),
    ).toEqual([
      ['new1', beat],
      ['old3', beat],
      ['old2', 'hb-old'],
      ['old1', 'hb-old'],
    ]);
  });
});

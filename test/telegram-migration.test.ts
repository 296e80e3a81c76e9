/**
 * A Telegram group that became a supergroup: the Bot API refuses the send
 * with `migrate_to_chat_id`; hookgate resends once to the new id, sends the
 * remaining parts there, and records the new id (with a reason naming the
 * move) so the operator can update `to`. A `migrate_to_chat_id` that is not
 * a chat id is neither sent to nor recorded, and the last route stays.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { AGENT, NODE_BINARY, query } from './helpers/runtime.ts';
import { type RecordedRequest, type StandIn, startStandIn } from './helpers/stand-in.ts';
import { storeOf, watchDeliveries } from './helpers/store-reads.ts';

const OLD_CHAT = -123456789;
const NEW_CHAT = -1001234567890;

let standIn: StandIn;
let server: TestServer;
const temp = tempDir();

/** The Bot API's refusal of a send to a group that became a supergroup, naming `migrateTo`. */
function migrated(migrateTo: unknown) {
  return {
    status: 400,
    body: {
      ok: false,
      error_code: 400,
      description: 'Bad Request: group chat was upgraded to a supergroup chat',
      parameters: { migrate_to_chat_id: migrateTo },
    },
  };
}

function telegram(req: RecordedRequest) {
  const { chat_id: chat } = req.json as { chat_id: number };
  if (chat === OLD_CHAT) return migrated(NEW_CHAT);
  return { status: 200, body: { ok: true, result: { message_id: 9, chat: { id: chat } } } };
}

beforeAll(async () => {
  standIn = await startStandIn(telegram);
  server = await startTestServer(
    {
      channels: { telegram: { botToken: '123456:tg-secret', baseUrl: standIn.url } },
      runtime: { heartbeat: { every: 'off' } },
      agents: {
        defaults: {
          runner: {
            kind: 'command',
            argv: [NODE_BINARY, AGENT],
            env: { AGENT_RECORD: path.join(temp.dir, 'record.jsonl') },
          },
        },
      },
    },
    { runtime: true, dataDir: temp.dir },
  );
});

afterAll(async () => {
  await server.stop();
  await standIn.close();
  temp.cleanup();
});

function rows(sql: string, ...params: string[]): Array<Record<string, unknown>> {
  const db = new DatabaseSync(path.join(temp.dir, 'hookgate.db'), { readOnly: true });
  try {
    return db.prepare(sql).all(...params) as Array<Record<string, unknown>>;
  } finally {
    db.close();
  }
}

async function waitFor<T>(probe: () => T | undefined, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('telegram chat migration', () => {
  it('a Telegram chat migration is recorded with the new id, and later parts go there', async () => {
    const res = await server.post('agent', {
      message: 'LONG:5000',
      channel: 'telegram',
      to: String(OLD_CHAT),
    });
    expect(res.status).toBe(200);
    const { runId } = (await res.json()) as { runId: string };
    const delivery = await waitFor(
      () => rows('SELECT * FROM deliveries WHERE source_id = ?', runId)[0],
      'the delivery record',
    );
    expect(delivery).toMatchObject({ state: 'sent', recipient: String(NEW_CHAT), parts_sent: 2 });
    expect(String(delivery['error'])).toContain(
      `the chat moved from ${OLD_CHAT} to ${NEW_CHAT}; update the recipient`,
    );
    const chats = standIn.requests.map((r) => (r.json as { chat_id: number }).chat_id);
    expect(chats).toEqual([OLD_CHAT, NEW_CHAT, NEW_CHAT]);
    const run = await waitFor(
      () => rows("SELECT outcome FROM actions WHERE id = ? AND state = 'done'", runId)[0],
      'the finished run',
    );
    expect(JSON.parse(run['outcome'] as string).delivery).toMatchObject({
      state: 'sent',
      recipient: String(NEW_CHAT),
    });
  });
});

describe('telegram chat migration to an id that is not one', () => {
  // Not a chat id: too long, with a bidi override and text after the digits.
  const BOGUS = `-100${'9'.repeat(12)} ; also see @evil\u202e${'Z'.repeat(2000)}`;
  const CHAT = 123456;

  it('a migration answer naming an invalid chat id: nothing is sent there, the heartbeat delivery fails saying so, the last route stays', async () => {
    const product = await startStandIn((req) => {
      const { chat_id: chat } = req.json as { chat_id: unknown };
      if (chat !== CHAT) return { status: 200, body: { ok: true, result: { message_id: 1 } } };
      return migrated(BOGUS);
    });
    const dir = tempDir();
    const gate = await startTestServer(
      {
        channels: { telegram: { botToken: '123456:tg-secret', baseUrl: product.url } },
        session: { defaultRoute: { channel: 'telegram', to: String(CHAT) } },
        runtime: { heartbeat: { every: 'off', coalesceMs: 0 }, retry: { maxAttempts: 1 } },
        agents: { defaults: { runner: { kind: 'command', argv: [NODE_BINARY, AGENT] } } },
      },
      { runtime: true, dataDir: dir.dir },
    );
    try {
      const store = storeOf(gate);
      const deliveries = watchDeliveries();
      for (const [n, text] of ['URGENT one', 'URGENT two'].entries()) {
        expect((await gate.post('wake', { text, mode: 'now' })).status).toBe(200);
        await waitFor(
          () => (deliveries.length > n ? true : undefined),
          `heartbeat delivery ${n + 1}`,
        );
        // Each heartbeat reply is sent to the chat it was configured for, never elsewhere.
        expect(await store.lastRoute('main')).toEqual({
          channel: 'telegram',
          recipient: String(CHAT),
        });
      }
      expect(deliveries.map((d) => [d.source, d.outcome])).toEqual([
        ['heartbeat', 'failed'],
        ['heartbeat', 'failed'],
      ]);
      const chats = product.requests.map((r) => (r.json as { chat_id: unknown }).chat_id);
      expect(chats).toEqual([CHAT, CHAT]);
      const errors = query(dir.dir, "SELECT error FROM deliveries WHERE source = 'heartbeat'");
      expect(errors).toHaveLength(2);
      for (const { error } of errors as Array<{ error: unknown }>) {
        expect(String(error)).toContain('the chat moved, but the answer names no valid chat id');
        expect(String(error)).not.toContain('ZZZ');
      }
    } finally {
      await gate.stop();
      await product.close();
      dir.cleanup();
    }
  });
});

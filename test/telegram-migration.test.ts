/**
 * A Telegram group that became a supergroup: the Bot API refuses the send
 * with `migrate_to_chat_id`; hookgate resends once to the new id, sends the
 * remaining parts there, and records the new id (with a reason naming the
 * move) so the operator can update `to`.
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { type RecordedRequest, type StandIn, startStandIn } from './helpers/stand-in.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const NODE = realpathSync(path.join(ROOT, 'node_modules/.bin/node'));
const AGENT = path.join(ROOT, 'test/fixtures/agent.mjs');
const OLD_CHAT = -123456789;
const NEW_CHAT = -1001234567890;

let standIn: StandIn;
let server: TestServer;
const temp = tempDir();

function telegram(req: RecordedRequest) {
  const { chat_id: chat } = req.json as { chat_id: number };
  if (chat === OLD_CHAT)
    return {
      status: 400,
      body: {
        ok: false,
        error_code: 400,
        description: 'Bad Request: group chat was upgraded to a supergroup chat',
        parameters: { migrate_to_chat_id: NEW_CHAT },
      },
    };
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
            argv: [NODE, AGENT],
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

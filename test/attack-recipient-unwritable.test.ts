/**
 * Attack: a recipient no channel can address, sent as `to` (JSON carries a
 * lone surrogate; a control character rides along as an escape). Teams'
 * own check took a lone surrogate, and building its URL then threw: the
 * run was left running with its session's later runs behind it. Every
 * channel now refuses such a `to` before its own form, at the door (also
 * with `channel: "last"` and from a mapping's template) and again at
 * delivery, for a row accepted before the check; and an adapter's send
 * that throws is a failed part, not a crash.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedAdapter } from '../engine/delivery/guarded-adapter.ts';
import { openSqliteStore } from '../engine/store/sqlite/action-store.ts';
import type { Action } from '../schemas/action.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { tempDir } from './helpers/process.ts';
import { type Stub, startStub } from './helpers/runtime.ts';
import { type StandIn, startStandIn } from './helpers/stand-in.ts';
import { waitForRun } from './helpers/store-reads.ts';
import { agentAction } from './runtime-store-contract.ts';

const LONE = '19:abc\ud800@thread.skype';

let standIn: StandIn;
let agent: Stub;
beforeAll(async () => {
  standIn = await startStandIn((req) =>
    req.url.startsWith('/token')
      ? { status: 200, body: { token_type: 'Bearer', expires_in: 3600, access_token: 'tok' } }
      : { status: 201, body: { id: 'activity-1' } },
  );
  agent = await startStub(() => ({ body: { reply: 'done' } }));
});
afterAll(async () => {
  await standIn?.close();
  await agent?.close();
});

const config = () => ({
  channels: {
    msteams: {
      appId: 'app',
      appPassword: 'teams-secret',
      tenantId: 'tenant',
      serviceUrl: `${standIn.url}/teams`,
      tokenUrl: `${standIn.url}/token`,
    },
  },
  runtime: { heartbeat: { every: 'off' } },
  agents: { defaults: { runner: { kind: 'http', url: `${agent.url}/run` } } },
  hooks: {
    defaultSessionKey: 'hook:inbox',
    mappings: [
      {
        id: 'relay',
        match: { path: 'relay' },
        action: 'agent',
        channel: 'msteams',
        templates: { message: '{{text}}', to: '{{room}}' },
      },
    ],
  },
});

describe('at the door', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(config());
  });
  afterAll(() => server?.stop());

  const refused = async (res: Response) => {
    expect(res.status).toBe(400);
    return ((await res.json()) as { error: { code: string; message: string } }).error;
  };

  it('a lone surrogate in `to` is 400 invalid_recipient, on a named channel and on `last`', async () => {
    for (const channel of ['msteams', 'last']) {
      const error = await refused(await server.post('agent', { message: 'hi', channel, to: LONE }));
      expect(error.code, channel).toBe('invalid_recipient');
      expect(error.message, channel).toContain('lone surrogate');
    }
    expect(await server.store.listActions({ limit: 10 })).toEqual([]);
  });

  it('a control character in `to` is 400 invalid_recipient', async () => {
    for (const to of ['19:abc\u0000@thread.skype', '19:abc\u009b@thread.skype', '19:a\u007f']) {
      const error = await refused(
        await server.post('agent', { message: 'hi', channel: 'msteams', to }),
      );
      expect(error.code).toBe('invalid_recipient');
    }
  });

  it("a mapping's `to` rendered from the payload is held to the same rule", async () => {
    const error = await refused(await server.post('relay', { text: 'hi', room: LONE }));
    expect(error.code).toBe('invalid_recipient');
  });
});

it('a row accepted before the check ends with its delivery skipped, and its session goes on', async () => {
  const data = tempDir('hookgate-unwritable-');
  const early = await openSqliteStore(data.dir);
  const old: Action = {
    ...agentAction('hook:inbox', 'old'),
    deliver: true,
    channel: 'msteams',
    to: LONE,
  };
  const next: Action = {
    ...agentAction('hook:inbox', 'next'),
    deliver: true,
    channel: 'msteams',
    to: '19:abc@thread.skype',
  };
  await early.appendOrGet({ actions: [old, next] });
  await early.close();
  const server = await startTestServer(config(), { dataDir: data.dir, runtime: true });
  try {
    const skipped = await waitForRun(server, old.id, 10_000);
    expect(skipped.state).toBe('done');
    expect(skipped.outcome?.delivery).toMatchObject({ state: 'skipped' });
    expect(skipped.outcome?.delivery?.reason).toContain('lone surrogate');
    const sent = await waitForRun(server, next.id, 10_000);
    expect(sent.outcome?.delivery).toMatchObject({ state: 'sent', partsSent: 1 });
  } finally {
    await server.stop();
    data.cleanup();
  }
});

it("an adapter's send that throws is a failed part naming only the error's kind", async () => {
  const adapter = guardedAdapter({
    id: 'msteams',
    maxLength: 100,
    checkRecipient: () => null,
    send: () => {
      throw new TypeError('Invalid URL https://app:teams-secret@example.test/');
    },
  });
  const result = await adapter.send('19:abc@thread.skype', 'hi');
  expect(result).toEqual({
    status: 'failed',
    reason: 'msteams could not send this part (hookgate error: TypeError); not retried',
  });
  expect(adapter.checkRecipient(LONE)).toContain('lone surrogate');
});

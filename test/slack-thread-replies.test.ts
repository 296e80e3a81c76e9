/**
 * The slack preset delivering to Slack with no recipient named: a signed
 * message is run by the agent and its reply posted back where the message
 * was, through a stand-in of the Web API. A message inside a thread is
 * answered in that thread (`thread_ts`), one at the channel's top level in
 * the channel, as a Slack user expects of a bot.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { slackEvent } from './helpers/provider-payloads.ts';
import { agentRunner, waitFor } from './helpers/runtime.ts';
import { nowSeconds } from './helpers/signed-http.ts';
import { slack } from './helpers/signature-senders.ts';
import { type StandIn, startStandIn } from './helpers/stand-in.ts';

const SECRET = 'slack-signing-secret-for-threads';
const CHANNEL = 'C0123456789';

describe('slack preset replies in Slack', () => {
  let standIn: StandIn;
  let server: TestServer;
  const temp = tempDir();
  beforeAll(async () => {
    standIn = await startStandIn((req) => {
      const body = req.json as { channel: string };
      return { status: 200, body: { ok: true, channel: body.channel, ts: '1712345999.000100' } };
    });
    server = await startTestServer(
      {
        channels: { slack: { botToken: 'xoxb-thread-test', baseUrl: `${standIn.url}/api` } },
        runtime: { heartbeat: { every: 'off' } },
        agents: { defaults: { runner: agentRunner(path.join(temp.dir, 'record.jsonl')) } },
        hooks: { presets: ['slack'], slack: { auth: { secret: SECRET }, channel: 'slack' } },
      },
      { runtime: true, dataDir: temp.dir },
    );
  });
  afterAll(async () => {
    await server?.stop();
    await standIn?.close();
    temp.cleanup();
  });

  /** Send a signed event and wait for the reply Slack got for it. */
  async function replyTo(event: Record<string, unknown>, eventId: string) {
    const body = JSON.stringify({ ...slackEvent(event), event_id: eventId });
    const headers = await slack.sign(SECRET, body, nowSeconds());
    const res = await server.post('slack', body, { headers, token: null });
    expect(res.status).toBe(200);
    // The test agent answers "done: <the message's first line>", which quotes the Slack text.
    const quoted = String(event['text']);
    return waitFor(`Slack's chat.postMessage for ${eventId}`, () =>
      standIn.requests.find((r) =>
        String((r.json as { text?: unknown } | undefined)?.text).includes(quoted),
      ),
    );
  }

  it('a mention inside a thread is answered in that thread', async () => {
    const posted = await replyTo(
      {
        type: 'app_mention',
        channel: CHANNEL,
        user: 'U0ADA',
        text: '<@UBOT> is the deploy done?',
        ts: '1712345679.000200',
        thread_ts: '1712345678.123456',
      },
      'Ev0THREAD',
    );
    expect(posted.url).toBe('/api/chat.postMessage');
    expect(posted.json).toMatchObject({ channel: CHANNEL, thread_ts: '1712345678.123456' });
  });

  it('a mention at the top of the channel is answered in the channel, not in a thread', async () => {
    const posted = await replyTo(
      { type: 'app_mention', channel: CHANNEL, user: 'U0ADA', text: '<@UBOT> status?' },
      'Ev0TOP',
    );
    expect(posted.json).toMatchObject({ channel: CHANNEL });
    expect(posted.json).not.toHaveProperty('thread_ts');
  });
});

/**
 * The slack preset delivering to Slack with no recipient named: a signed
 * message or command is run by the agent and its reply posted back where it
 * came from, through a stand-in of the Web API. A message inside a thread is
 * answered in that thread (`thread_ts`), one at the channel's top level in
 * the channel, as a Slack user expects of a bot; a slash command typed in a
 * direct message (where the app may not post) in the app's conversation
 * with the user who typed it.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slackPlainText } from '../engine/delivery/adapters/slack.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { slackCommand, slackEvent } from './helpers/provider-payloads.ts';
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

  /** Send a signed body and wait for the reply Slack got for it, which quotes `quoted`. */
  async function replyFor(body: string, contentType: string, quoted: string) {
    const headers = {
      ...(await slack.sign(SECRET, body, nowSeconds())),
      'content-type': contentType,
    };
    const res = await server.post('slack', body, { headers, token: null });
    expect(res.status).toBe(200);
    // The test agent answers "done: <the message's first line>", which quotes the Slack text
    // (as plain text: its `<@UBOT>` arrives escaped).
    return waitFor(`Slack's chat.postMessage quoting ${quoted}`, () =>
      standIn.requests.find((r) =>
        String((r.json as { text?: unknown } | undefined)?.text).includes(slackPlainText(quoted)),
      ),
    );
  }

  const replyTo = (event: Record<string, unknown>, eventId: string) =>
    replyFor(
      JSON.stringify({ ...slackEvent(event), event_id: eventId }),
      'application/json',
      String(event['text']),
    );

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

  it("a slash command typed in a direct message is answered in the app's conversation with its user", async () => {
    const command = slackCommand({
      command: '/ask',
      text: 'what broke overnight?',
      channel_id: 'D0DIRECT99',
      channel_name: 'directmessage',
    });
    const posted = await replyFor(
      new URLSearchParams(command).toString(),
      'application/x-www-form-urlencoded',
      'what broke overnight?',
    );
    expect(posted.json).toMatchObject({ channel: 'U0ADA' });
  });
});

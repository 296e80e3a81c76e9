/**
 * Payload text steering the agent's reply into a mass ping: a reply that
 * says <!channel> (Slack) or @channel / @all / @here (Mattermost) reaches
 * the product as plain text that notifies nobody beyond the conversation's
 * usual notice, as Discord's replies already could not ping @everyone.
 * End to end: /hooks/agent with `deliver`, the test agent quoting the
 * message in its reply, stand-ins of both products recording what they got.
 */
import fc from 'fast-check';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withoutChannelMentions } from '../engine/delivery/adapters/mattermost.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { agentRunner, waitFor } from './helpers/runtime.ts';
import { type StandIn, startStandIn } from './helpers/stand-in.ts';

const MATTERMOST_CHANNEL = 'abcdefghijklmnopqrstuvwxyz';

/** The words Mattermost's server reads as mentions of a whole channel (its word rule). */
function channelMentions(message: string): string[] {
  return message
    .split(/[^\p{L}\p{N}:._@-]+/u)
    .map((word) => word.replace(/[.:_-]+$/, '').toLowerCase())
    .filter((word) => word === '@channel' || word === '@all' || word === '@here');
}

describe('a reply steered into a mass ping', () => {
  let standIn: StandIn;
  let server: TestServer;
  const temp = tempDir();
  beforeAll(async () => {
    standIn = await startStandIn((req) =>
      req.url.startsWith('/sl/')
        ? { status: 200, body: { ok: true, channel: 'C0123456789', ts: '1712345999.000100' } }
        : { status: 201, body: { id: 'p0000000000000000000000001' } },
    );
    server = await startTestServer(
      {
        channels: {
          slack: { botToken: 'xoxb-mentions', baseUrl: `${standIn.url}/sl` },
          mattermost: { url: `${standIn.url}/mm`, token: 'mm-mentions' },
        },
        runtime: { heartbeat: { every: 'off' } },
        agents: { defaults: { runner: agentRunner(path.join(temp.dir, 'record.jsonl')) } },
      },
      { runtime: true, dataDir: temp.dir },
    );
  });
  afterAll(async () => {
    await server?.stop();
    await standIn?.close();
    temp.cleanup();
  });

  /** Ask for a run delivered to `channel`/`to` and return the body the product got. */
  async function delivered(channel: string, to: string, message: string, prefix: string) {
    const res = await server.post('agent', { message, channel, to, deliver: true, name: 'Alert' });
    expect(res.status).toBe(200);
    const request = await waitFor(`the ${channel} post`, () =>
      standIn.requests.find((r) => r.url.startsWith(prefix)),
    );
    return request.json as Record<string, unknown>;
  }

  it('Slack: <!channel>, <!here> and <@U…> in the reply are text, not pings', async () => {
    const body = await delivered(
      'slack',
      'C0123456789',
      'URGENT <!channel> <!here|here> <@U0ADA> read this',
      '/sl/',
    );
    expect(body['text']).toContain('URGENT &lt;!channel&gt; &lt;!here|here&gt; &lt;@U0ADA&gt;');
    expect(String(body['text'])).not.toMatch(/<[!@]/);
  });

  it('Mattermost: @channel, @ALL and @here. in the reply notify no one, and read the same', async () => {
    const message = 'URGENT @channel @ALL @here. read this, cc @ada';
    const body = await delivered('mattermost', MATTERMOST_CHANNEL, message, '/mm/');
    const text = String(body['message']);
    expect(channelMentions(text)).toEqual([]);
    expect(text.replaceAll('\u200b', '')).toContain(message);
    // A person named in the reply is still mentioned.
    expect(text).toContain(' @ada');
  });
});

describe('withoutChannelMentions', () => {
  const pieces = fc.constantFrom(
    '@',
    'channel',
    'CHANNEL',
    'all',
    'here',
    'ada',
    ' ',
    '.',
    '-',
    '_',
    ':',
    '\n',
    'é',
    'x',
    '`',
  );
  const texts = fc.array(pieces, { maxLength: 40 }).map((parts) => parts.join(''));

  it('leaves no word Mattermost reads as a channel-wide mention, and changes nothing else', () => {
    fc.assert(
      fc.property(texts, (text) => {
        const out = withoutChannelMentions(text);
        expect(channelMentions(out)).toEqual([]);
        expect(out.replaceAll('\u200b', '')).toBe(text);
      }),
    );
  });
});

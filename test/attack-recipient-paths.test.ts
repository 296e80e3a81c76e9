/**
 * A recipient string (a /hooks/agent `to`, or one a mapping rendered from
 * payload text) that changes which API endpoint the channel calls: a Teams
 * conversation id of `..` or `.` passed the check, and the URL
 * `{serviceUrl}/v3/conversations/../activities` reached the product as
 * `/v3/activities`, with the bot's token. Every channel's request must go to
 * its one endpoint, whatever recipient its check accepts.
 */
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADAPTERS } from '../engine/delivery/registry.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { type StandIn, startStandIn } from './helpers/stand-in.ts';

// Recipients that a URL parser or a product could read as more than one id.
const HOSTILE = ['.', '..', './', '../x', '%2e%2e', '.%2e', '..;x', 'a/../b', '?x=1', '#f', ''];

/** Each channel's settings against the stand-in, and the path every send must take. */
function channels(base: string) {
  return {
    whatsapp: {
      settings: { phoneNumberId: '1029384756', accessToken: 'wa-secret', baseUrl: `${base}/wa` },
      path: /^\/wa\/v[0-9.]+\/1029384756\/messages$/,
    },
    telegram: {
      settings: { botToken: '123456:tg-secret', baseUrl: `${base}/tg` },
      path: /^\/tg\/bot123456:tg-secret\/sendMessage$/,
    },
    discord: {
      settings: { botToken: 'dc-secret', baseUrl: `${base}/dc` },
      path: /^\/dc\/channels\/[0-9]{17,20}\/messages$/,
    },
    slack: {
      settings: { botToken: 'xoxb-sl-secret', baseUrl: `${base}/sl` },
      path: /^\/sl\/chat\.postMessage$/,
    },
    mattermost: {
      settings: { url: `${base}/mm`, token: 'mm-secret' },
      path: /^\/mm\/api\/v4\/posts$/,
    },
    signal: { settings: { url: `${base}/sg`, number: '+15550001111' }, path: /^\/sg\/v2\/send$/ },
    imessage: {
      settings: { url: `${base}/bb`, password: 'bb-secret' },
      path: /^\/bb\/api\/v1\/message\/text\?password=bb-secret$/,
    },
    msteams: {
      settings: {
        appId: 'app',
        appPassword: 'teams-secret',
        tenantId: 'tenant',
        serviceUrl: `${base}/teams`,
        tokenUrl: `${base}/token`,
      },
      // One path segment between `conversations/` and `/activities`, never a dot segment.
      path: /^\/teams\/v3\/conversations\/(?!\.{1,2}\/)[^/?#]+\/activities$/,
    },
  } as const;
}

describe('a recipient that changes the endpoint a channel calls', () => {
  // One stand-in per channel: a request of another channel's test that arrives late (a loaded
  // machine) must not be taken for this channel's.
  let standIn: StandIn;
  beforeEach(async () => {
    standIn = await startStandIn((req) =>
      req.url.startsWith('/token')
        ? { status: 200, body: { token_type: 'Bearer', expires_in: 3600, access_token: 'tok' } }
        : { status: 200, body: { ok: true } },
    );
  });
  afterEach(() => standIn.close());

  it.each(Object.keys(ADAPTERS))(
    '%s: every recipient its check accepts is sent to its one endpoint',
    async (id) => {
      const channel = channels(standIn.url)[id as keyof ReturnType<typeof channels>];
      // The schema's default wait (the raw settings here have none: a send gave up at once and
      // its request reached the stand-in after the next test's began).
      const adapter = ADAPTERS[id]!({ timeoutMs: 10_000, ...channel.settings });
      const recipients = [...HOSTILE, ...fc.sample(fc.string({ maxLength: 12 }), 200)];
      for (const to of recipients.filter((r) => adapter.checkRecipient(r) === null)) {
        const before = standIn.requests.length;
        await adapter.send(adapter.normaliseRecipient?.(to) ?? to, 'hello');
        const posts = standIn.requests.slice(before).filter((r) => !r.url.startsWith('/token'));
        for (const post of posts)
          expect({ to, url: post.url }).toEqual({ to, url: expect.stringMatching(channel.path) });
      }
    },
  );
});

describe('the door refuses a dot-segment Teams recipient', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      channels: {
        msteams: {
          appId: 'app',
          appPassword: 'teams-secret',
          tenantId: 'tenant',
          serviceUrl: 'http://127.0.0.1:9/teams',
        },
      },
    });
  });
  afterAll(() => server?.stop());

  it.each(['.', '..'])('to %j is 400 invalid_recipient', async (to) => {
    const res = await server.post('agent', { message: 'x', channel: 'msteams', to });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
      'invalid_recipient',
    );
  });
});

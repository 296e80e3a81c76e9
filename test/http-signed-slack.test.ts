/**
 * End-to-end: the slack preset over real HTTP. Slack ships no signer, so each
 * request is signed by Slack's documented recipe and every signature is first
 * checked by @slack/bolt's own verifier: url_verification answered only
 * after verification, ssl_check signed or as Slack sends it (unsigned), a
 * slash command (form fields) as an agent run, event_callback replays by
 * event_id, and Slack's retry marker.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { isValidSlackRequest } from '@slack/bolt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { slackCommand, slackEvent } from './helpers/provider-payloads.ts';
import { nowSeconds, sendRaw, storedActions, UNAUTHORIZED_BODY } from './helpers/signed-http.ts';

const SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const JSON_TYPE = 'application/json';
const FORM_TYPE = 'application/x-www-form-urlencoded';

/** Slack's headers for a body, checked by bolt's verifier before use. */
function slackHeaders(body: string, contentType: string, timestamp = nowSeconds()) {
  const signature = `v0=${createHmac('sha256', SECRET).update(`v0:${timestamp}:${body}`).digest('hex')}`;
  const valid = isValidSlackRequest({
    signingSecret: SECRET,
    body,
    headers: { 'x-slack-signature': signature, 'x-slack-request-timestamp': timestamp },
    // Bolt checks the signature at the signing time: the window is hookgate's to judge.
    nowMilliseconds: timestamp * 1000,
  });
  if (!valid) throw new Error('bolt does not accept the test signature');
  return {
    'content-type': contentType,
    'user-agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
    'x-slack-signature': signature,
    'x-slack-request-timestamp': String(timestamp),
  };
}

const mention = (eventId: string) =>
  JSON.stringify({
    ...slackEvent({ type: 'app_mention', user: 'U012', channel: 'C034', text: '<@UBOT> status?' }),
    event_id: eventId,
  });

describe('slack preset', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: { presets: ['slack'], slack: { auth: { secret: SECRET } } },
    });
  });
  afterAll(() => server.stop());

  const post = (body: string, headers: Record<string, string>) =>
    sendRaw(server, 'slack', body, headers);

  it('answers url_verification with the challenge once verified, storing nothing', async () => {
    const body = JSON.stringify({
      token: 'legacy',
      challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
      type: 'url_verification',
    });
    const before = (await storedActions(server)).length;
    const res = await post(body, slackHeaders(body, JSON_TYPE));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
    expect(await storedActions(server)).toHaveLength(before);
  });

  it('refuses an unsigned url_verification with 401 and echoes no challenge', async () => {
    const body = JSON.stringify({ challenge: 'echo-me-please', type: 'url_verification' });
    const res = await post(body, { 'content-type': JSON_TYPE });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORIZED_BODY);
    expect(res.text).not.toContain('echo-me-please');
  });

  it('answers a signed ssl_check (form) 200, storing nothing', async () => {
    const body = 'ssl_check=1&token=legacy-verification-token';
    const before = (await storedActions(server)).length;
    const res = await post(body, slackHeaders(body, FORM_TYPE));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    expect(await storedActions(server)).toHaveLength(before);
  });

  it.each([
    ['another form body', 'command=%2Fask&text=hi'],
    ['an ssl_check with another field beside it', 'ssl_check=1&text=hi'],
    ['an ssl_check twice', 'ssl_check=1&ssl_check=1'],
    ['an ssl_check of another value', 'ssl_check=2&token=legacy'],
  ])('refuses unsigned %s with 401', async (_name, body) => {
    const res = await post(body, { 'content-type': FORM_TYPE });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORIZED_BODY);
  });

  it('turns a slash command (form fields) into an agent run for the channel', async () => {
    const body = new URLSearchParams(
      slackCommand({ command: '/ask', text: 'what broke?' }),
    ).toString();
    const res = await post(body, slackHeaders(body, FORM_TYPE));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, runId: expect.any(String) });
    const [action] = await storedActions(server);
    expect(action).toMatchObject({
      kind: 'agent',
      mappingId: 'slack-command',
      sessionKey: 'hook:slack:C0OPS',
      message: expect.stringContaining('Slack /ask from @ada in #ops: what broke?'),
      verification: { scheme: 'slack', secretIndex: 0 },
    });
  });

  it('answers a repeated event_callback (same event_id) with the first body, once stored', async () => {
    const before = (await storedActions(server)).length;
    const eventId = `Ev${randomUUID().replaceAll('-', '').slice(0, 10).toUpperCase()}`;
    const body = mention(eventId);
    const first = await post(body, slackHeaders(body, JSON_TYPE, nowSeconds() - 3));
    expect(first.status).toBe(200);
    const again = await post(body, {
      ...slackHeaders(body, JSON_TYPE),
      'x-slack-retry-num': '1',
      'x-slack-retry-reason': 'http_timeout',
    });
    expect(again.status).toBe(200);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const actions = await storedActions(server);
    expect(actions).toHaveLength(before + 1);
    expect(actions[0]).toMatchObject({
      message: expect.stringContaining('Slack mention from U012 in C034'),
      verification: { scheme: 'slack', deliveryId: eventId },
    });
    expect(actions[0]?.verification).not.toHaveProperty('retry');
  });

  it('marks a retry whose first attempt never arrived with verification.retry', async () => {
    const eventId = `Ev${randomUUID().replaceAll('-', '').slice(0, 10).toUpperCase()}`;
    const body = mention(eventId);
    const res = await post(body, {
      ...slackHeaders(body, JSON_TYPE),
      'x-slack-retry-num': '2',
      'x-slack-retry-reason': 'http_error',
    });
    expect(res.status).toBe(200);
    const [action] = await storedActions(server);
    expect(action?.verification).toMatchObject({
      scheme: 'slack',
      deliveryId: eventId,
      retry: true,
    });
  });

  it.each([
    ['a stale timestamp (6 minutes old)', -360],
    ['a timestamp 6 minutes ahead', 360],
  ])('refuses %s with 401', async (_, offset) => {
    const body = mention(`EvSTALE${offset}`);
    const res = await post(body, slackHeaders(body, JSON_TYPE, nowSeconds() + offset));
    expect(res.status).toBe(401);
  });
});

describe("Slack's SSL check as Slack sends it (unsigned)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        presets: ['slack'],
        slack: { auth: { secret: SECRET } },
        authRateLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 60 },
      },
    });
  });
  afterAll(() => server.stop());

  it('is answered 200, stores nothing and is never counted as a failed authentication', async () => {
    const before = (await storedActions(server)).length;
    // The request Slack sends to a slash command's Request URL: no signature headers.
    const probe = {
      'content-type': FORM_TYPE,
      'user-agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
    };
    for (let i = 0; i < 5; i++) {
      const res = await sendRaw(server, 'slack', 'ssl_check=1&token=xxx', probe);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ok: true });
    }
    expect(await storedActions(server)).toHaveLength(before);
    // Not locked: the address's signed requests still get through.
    const body = 'ssl_check=1';
    expect((await sendRaw(server, 'slack', body, slackHeaders(body, FORM_TYPE))).status).toBe(200);
  });
});

/**
 * The Teams adapter against a stand-in of Microsoft Entra's token endpoint
 * and the Bot Framework Connector (routed on the path): the shared contract,
 * the exact token and activity requests, token caching and the refresh on
 * 401, and Teams' status codes mapped to retry or failure.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createTeamsAdapter,
  defaultTeamsTokenUrl,
} from '../../engine/delivery/adapters/msteams.ts';
import { describeAdapterContract, type Mode } from '../delivery-contract.ts';
import {
  type RecordedRequest,
  type StandIn,
  type StandInReply,
  startStandIn,
} from '../helpers/stand-in.ts';

const APP_ID = '0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b';
const APP_PASSWORD = 'teams~S3cret.Value_123';
const TENANT = '11111111-2222-3333-4444-555555555555';
const CONVERSATION = '19:0a1b2c3d4e5f@thread.tacv2';
const TOKEN_PATH = `/${TENANT}/oauth2/v2.0/token`;

const isTokenCall = (req: RecordedRequest) => req.url === TOKEN_PATH;

const settingsFor = (tokenBase: string, serviceBase: string) => ({
  appId: APP_ID,
  appPassword: APP_PASSWORD,
  tenantId: TENANT,
  serviceUrl: `${serviceBase}/teams/`,
  tokenUrl: `${tokenBase}${TOKEN_PATH}`,
  timeoutMs: 2000,
});

/** Entra's token answer; each call issues a new token (`token-1`, `token-2`, ...). */
function tokenIssuer(expiresIn = 3600) {
  let issued = 0;
  return (): StandInReply => {
    issued += 1;
    return {
      status: 200,
      body: {
        token_type: 'Bearer',
        expires_in: expiresIn,
        ext_expires_in: expiresIn,
        access_token: `token-${issued}`,
      },
    };
  };
}

function teamsError(status: number, code: string, message: string): StandInReply {
  return { status, body: { error: { code, message } } };
}

function connectorReply(mode: Mode): StandInReply {
  switch (mode) {
    case 'ok':
      return { status: 201, body: { id: '1700000000000' } };
    case 'rate_limited':
      return {
        ...teamsError(429, 'Throttled', 'Too many requests'),
        headers: { 'retry-after': '2' },
      };
    case 'server_error':
      return teamsError(502, 'ServiceError', 'Dependency failure');
    case 'auth_failed':
      return teamsError(401, 'BotNotRegistered', 'No registration found for this bot.');
    case 'bad_recipient':
      return teamsError(404, 'ConversationNotFound', 'Conversation not found.');
  }
}

// The contract counts every request on its stand-in and expects one per
// send, so there the token comes from a second stand-in (the per-adapter
// tests below serve both from one stand-in).
let tokenStandIn: StandIn;
const contractTokens = tokenIssuer();
beforeAll(async () => {
  tokenStandIn = await startStandIn(() => contractTokens());
});
afterAll(() => tokenStandIn.close());

describeAdapterContract({
  id: 'msteams',
  factory: createTeamsAdapter,
  settings: (url) => settingsFor(tokenStandIn.url, url),
  validRecipients: [
    CONVERSATION,
    'a:1Xyz-AbC_dEf0123456789',
    '19:meeting_MjA0@thread.v2',
    `${CONVERSATION};messageid=1700000000000`,
  ],
  invalidRecipients: ['', ' ', '19:abc def@thread.v2', 'a:1\n', 'x'.repeat(513)],
  reply: (mode, req) =>
    isTokenCall(req) ? { status: 500, body: 'unexpected' } : connectorReply(mode),
  sent: (req) => {
    const match = /^\/teams\/v3\/conversations\/([^/]+)\/activities$/.exec(req.url);
    const body = req.json as { text: string };
    return { text: body.text, to: decodeURIComponent(match?.[1] ?? '') };
  },
  rateLimitMs: 2000,
  secrets: [APP_PASSWORD, 'token-1', 'token-2'],
});

describe('msteams adapter: token flow, the documented request and answers', () => {
  let standIn: StandIn;
  let tokens = tokenIssuer();
  let connector: (req: RecordedRequest) => StandInReply = () => connectorReply('ok');
  beforeAll(async () => {
    standIn = await startStandIn((req) => (isTokenCall(req) ? tokens() : connector(req)));
  });
  afterAll(() => standIn.close());
  beforeEach(() => {
    tokens = tokenIssuer();
    connector = () => connectorReply('ok');
    standIn.requests.length = 0;
  });

  const adapterFor = (extra: Record<string, unknown> = {}) =>
    createTeamsAdapter({ ...settingsFor(standIn.url, standIn.url), ...extra });
  const tokenCalls = () => standIn.requests.filter(isTokenCall);
  const activityCalls = () => standIn.requests.filter((req) => !isTokenCall(req));

  it('gets a client-credentials token with the documented form', async () => {
    await adapterFor().send(CONVERSATION, 'hi');
    const [req] = tokenCalls() as [RecordedRequest];
    expect(req.method).toBe('POST');
    expect(req.url).toBe(TOKEN_PATH);
    expect(req.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(new URLSearchParams(req.raw))).toEqual({
      grant_type: 'client_credentials',
      client_id: APP_ID,
      client_secret: APP_PASSWORD,
      scope: 'https://api.botframework.com/.default',
    });
  });

  it('POSTs a plain-text message activity to the conversation with the bearer token', async () => {
    const result = await adapterFor().send(CONVERSATION, 'Deploy done\n**not bold**');
    expect(result).toEqual({ status: 'sent', messageId: '1700000000000' });
    const [req] = activityCalls() as [RecordedRequest];
    expect(req.method).toBe('POST');
    expect(req.url).toBe(`/teams/v3/conversations/${encodeURIComponent(CONVERSATION)}/activities`);
    expect(req.headers.authorization).toBe('Bearer token-1');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.json).toEqual({
      type: 'message',
      text: 'Deploy done\n**not bold**',
      textFormat: 'plain',
    });
  });

  it('defaults the token URL to Microsoft Entra for the tenant', () => {
    expect(defaultTeamsTokenUrl(TENANT)).toBe(
      `https://login.microsoftonline.com/${TENANT}/oauth2/v2.0/token`,
    );
  });

  it('keeps a full part within 28 KB of UTF-16', () => {
    const adapter = adapterFor();
    const activity = { type: 'message', text: 'x'.repeat(adapter.maxLength), textFormat: 'plain' };
    expect(JSON.stringify(activity).length * 2).toBeLessThanOrEqual(28 * 1024);
  });

  it('gets one token for several sends, sequential or concurrent', async () => {
    const adapter = adapterFor();
    await adapter.send(CONVERSATION, 'one');
    await adapter.send(CONVERSATION, 'two');
    await Promise.all([adapter.send(CONVERSATION, 'three'), adapter.send(CONVERSATION, 'four')]);
    expect(tokenCalls()).toHaveLength(1);
    expect(activityCalls()).toHaveLength(4);
    for (const req of activityCalls()) expect(req.headers.authorization).toBe('Bearer token-1');
  });

  it('shares one token request between concurrent first sends', async () => {
    const adapter = adapterFor();
    const results = await Promise.all(
      [1, 2, 3].map((n) => adapter.send(CONVERSATION, `part ${n}`)),
    );
    expect(results.map((r) => r.status)).toEqual(['sent', 'sent', 'sent']);
    expect(tokenCalls()).toHaveLength(1);
  });

  it('gets a new token shortly before the cached one expires', async () => {
    tokens = tokenIssuer(1); // refreshed after half its 1 s lifetime
    const adapter = adapterFor();
    await adapter.send(CONVERSATION, 'one');
    await adapter.send(CONVERSATION, 'two');
    expect(tokenCalls()).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 600));
    await adapter.send(CONVERSATION, 'three');
    expect(tokenCalls()).toHaveLength(2);
    expect(activityCalls().at(-1)?.headers.authorization).toBe('Bearer token-2');
  });

  it('refreshes the token once on 401 and resends once', async () => {
    connector = (req) =>
      req.headers.authorization === 'Bearer token-1'
        ? teamsError(401, 'Unauthorized', 'Authorization has been denied for this request.')
        : connectorReply('ok');
    const adapter = adapterFor();
    expect(await adapter.send(CONVERSATION, 'hello')).toMatchObject({ status: 'sent' });
    expect(tokenCalls()).toHaveLength(2);
    expect(activityCalls().map((req) => req.headers.authorization)).toEqual([
      'Bearer token-1',
      'Bearer token-2',
    ]);
    // The fresh token stays cached.
    await adapter.send(CONVERSATION, 'again');
    expect(tokenCalls()).toHaveLength(2);
  });

  it('fails after a second 401 with a fresh token, without secrets', async () => {
    connector = () => connectorReply('auth_failed');
    const result = await adapterFor().send(CONVERSATION, 'hello');
    expect(result).toMatchObject({ status: 'failed', reason: expect.stringContaining('401') });
    expect(tokenCalls()).toHaveLength(2);
    expect(activityCalls()).toHaveLength(2);
    const text = JSON.stringify(result);
    for (const leak of [APP_PASSWORD, 'token-1', 'token-2', 'hello'])
      expect(text).not.toContain(leak);
  });

  it('fails without sending when Entra refuses the credentials', async () => {
    tokens = () => ({
      status: 401,
      body: {
        error: 'invalid_client',
        error_description: `AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${APP_ID}'.`,
        error_codes: [7000215],
        trace_id: 'trace',
        correlation_id: 'correlation',
      },
    });
    const result = await adapterFor().send(CONVERSATION, 'hello');
    expect(result).toMatchObject({
      status: 'failed',
      reason: expect.stringContaining('invalid_client'),
    });
    expect(JSON.stringify(result)).not.toContain(APP_PASSWORD);
    expect(activityCalls()).toHaveLength(0);
  });

  it('retries when the token endpoint is down or unreachable', async () => {
    tokens = () => ({ status: 503, headers: { 'retry-after': '5' }, body: 'unavailable' });
    expect(await adapterFor().send(CONVERSATION, 'x')).toMatchObject({
      status: 'retry',
      retryAfterMs: 5000,
    });
    const gone = adapterFor({ tokenUrl: 'http://127.0.0.1:9/token' });
    const result = await gone.send(CONVERSATION, 'x');
    expect(result).toMatchObject({
      status: 'retry',
      reason: expect.stringContaining('token request'),
    });
    expect((result as { reason: string }).reason).not.toContain('duplicate');
  });

  it.each([
    [teamsError(412, 'PreconditionFailed', 'Concurrent operation'), 'retry', 'HTTP 412'],
    [teamsError(503, 'ServiceUnavailable', 'Unavailable'), 'retry', 'HTTP 503'],
    [{ status: 504 }, 'retry', 'HTTP 504'],
    [teamsError(400, 'BadArgument', 'Invalid activity'), 'failed', 'BadArgument'],
    [
      teamsError(403, 'ConversationBlockedByUser', 'User blocked the bot'),
      'failed',
      'may not post',
    ],
    [teamsError(403, 'InvalidBotApiHost', 'Wrong host'), 'failed', 'serviceUrl'],
    [teamsError(413, 'MessageSizeTooBig', 'Message too big'), 'failed', 're-split'],
    [teamsError(500, 'ServiceError', 'Internal error'), 'retry', 'may have been posted'],
  ] as const)('maps %j to %s', async (answer, status, words) => {
    connector = () => answer;
    const result = await adapterFor().send(CONVERSATION, 'hello');
    expect(result).toMatchObject({ status, reason: expect.stringContaining(words) });
  });

  it('retries a timeout, warning of a possible duplicate', async () => {
    connector = () => ({ ...connectorReply('ok'), delayMs: 1500 });
    const result = await adapterFor({ timeoutMs: 200 }).send(CONVERSATION, 'hello');
    expect(result).toMatchObject({ status: 'retry', reason: expect.stringContaining('duplicate') });
  });
});

/**
 * The Mattermost adapter against a stand-in of the REST API v4: the shared
 * contract, the exact create-post request, recipient rows, and the mapping
 * of Mattermost's error ids and rate-limit headers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMattermostAdapter } from '../../engine/delivery/adapters/mattermost.ts';
import { describeAdapterContract, type Mode } from '../delivery-contract.ts';
import { type RecordedRequest, type StandIn, startStandIn } from '../helpers/stand-in.ts';

const TOKEN = 'mm-token-9f8e7d6c5b4a';
const CHANNEL = 'ab12cd34ef56gh78ij90kl12mn';

const settings = (url: string) => ({ url, token: TOKEN, timeoutMs: 2000 });

function mattermostError(id: string, message: string, status: number) {
  return { id, message, request_id: 'r1x2y3', status_code: status, is_oauth: false };
}

function reply(mode: Mode, req: RecordedRequest) {
  const body = req.json as { channel_id: string; message: string };
  switch (mode) {
    case 'ok':
      return {
        status: 201,
        body: { id: 'p0st1d0000000000000000000a', create_at: 1_700_000_000_000, ...body },
      };
    case 'rate_limited':
      return {
        status: 429,
        headers: {
          'content-type': 'text/plain',
          'retry-after': '3',
          'x-ratelimit-limit': '10',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': '3',
        },
        body: 'limit exceeded',
      };
    case 'server_error':
      return {
        status: 500,
        body: mattermostError('app.post.save.app_error', 'Unable to save the post.', 500),
      };
    case 'auth_failed':
      return {
        status: 401,
        body: mattermostError(
          'api.context.session_expired.app_error',
          'Invalid or expired session.',
          401,
        ),
      };
    case 'bad_recipient':
      return {
        status: 400,
        body: mattermostError(
          'api.context.invalid_param.app_error',
          'Invalid post.channel_id parameter.',
          400,
        ),
      };
  }
}

describeAdapterContract({
  id: 'mattermost',
  factory: createMattermostAdapter,
  settings,
  validRecipients: [CHANNEL, 'z'.repeat(26), '0'.repeat(26)],
  invalidRecipients: [
    '',
    'town-square',
    CHANNEL.toUpperCase(),
    `${CHANNEL}x`,
    CHANNEL.slice(1),
    `${CHANNEL.slice(1)}_`,
  ],
  reply,
  sent: (req) => {
    const body = req.json as { channel_id: string; message: string };
    return { text: body.message, to: body.channel_id };
  },
  rateLimitMs: 3000,
  secrets: [TOKEN],
});

describe('mattermost adapter: the documented request and answers', () => {
  let standIn: StandIn;
  beforeAll(async () => {
    standIn = await startStandIn((req) => reply('ok', req));
  });
  afterAll(() => standIn.close());

  it('POSTs {url}/api/v4/posts with a bearer token and exactly channel_id and message', async () => {
    standIn.respond((req) => reply('ok', req));
    const adapter = createMattermostAdapter(settings(`${standIn.url}/`));
    const before = standIn.requests.length;
    const result = await adapter.send(CHANNEL, 'Deploy **done**\nline two');
    expect(result).toEqual({ status: 'sent', messageId: 'p0st1d0000000000000000000a' });
    const [req] = standIn.requests.slice(before) as [RecordedRequest];
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/api/v4/posts');
    expect(req.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.json).toEqual({ channel_id: CHANNEL, message: 'Deploy **done**\nline two' });
  });

  it('keeps parts within the default post size', () => {
    expect(createMattermostAdapter(settings(standIn.url)).maxLength).toBe(16_383);
  });

  it.each([
    [CHANNEL, null],
    ['abcdefghijklmnopqrstuvwxyz', null],
    [CHANNEL.toUpperCase(), 'lower case'],
    ['@alice', '26 lower-case'],
    ['~town-square', '26 lower-case'],
  ])('checks the recipient %j', (to, problem) => {
    const result = createMattermostAdapter(settings(standIn.url)).checkRecipient(to);
    if (problem === null) expect(result).toBeNull();
    else expect(result).toContain(problem);
  });

  const send = async (answer: Parameters<StandIn['respond']>[0], text = 'hello') => {
    standIn.respond(answer);
    return createMattermostAdapter(settings(standIn.url)).send(CHANNEL, text);
  };

  it('asks to re-split a message the server finds too long', async () => {
    const result = await send(() => ({
      status: 400,
      body: mattermostError(
        'model.post.is_valid.message_length.app_error',
        'Invalid message length.',
        400,
      ),
    }));
    expect(result).toMatchObject({ status: 'failed', reason: expect.stringContaining('re-split') });
  });

  it('maps 403 (not a member) and 404 to permanent failures', async () => {
    const forbidden = await send(() => ({
      status: 403,
      body: mattermostError(
        'api.context.permissions.app_error',
        'You do not have the appropriate permissions.',
        403,
      ),
    }));
    expect(forbidden).toMatchObject({
      status: 'failed',
      reason: expect.stringContaining('HTTP 403'),
    });
    const missing = await send(() => ({
      status: 404,
      body: mattermostError(
        'app.channel.get.existing.app_error',
        'Unable to find the existing channel.',
        404,
      ),
    }));
    expect(missing).toMatchObject({
      status: 'failed',
      reason: expect.stringContaining('HTTP 404'),
    });
  });

  it('uses X-Ratelimit-Reset when a 429 has no Retry-After', async () => {
    const result = await send(() => ({
      status: 429,
      headers: { 'content-type': 'text/plain', 'x-ratelimit-reset': '7' },
      body: 'limit exceeded',
    }));
    expect(result).toEqual({ status: 'retry', reason: expect.any(String), retryAfterMs: 7000 });
  });

  it('retries 502 and 503', async () => {
    expect((await send(() => ({ status: 502, body: 'bad gateway' }))).status).toBe('retry');
    expect((await send(() => ({ status: 503 }))).status).toBe('retry');
  });

  it('retries a timeout, warning of a possible duplicate, without the token or text', async () => {
    standIn.respond((req) => ({ ...reply('ok', req), delayMs: 1500 }));
    const adapter = createMattermostAdapter({ ...settings(standIn.url), timeoutMs: 200 });
    const result = await adapter.send(CHANNEL, 'secret plans');
    expect(result).toMatchObject({ status: 'retry', reason: expect.stringContaining('duplicate') });
    expect(JSON.stringify(result)).not.toContain(TOKEN);
    expect(JSON.stringify(result)).not.toContain('secret plans');
  });

  it("stops when the caller's signal aborts", async () => {
    standIn.respond((req) => ({ ...reply('ok', req), delayMs: 1500 }));
    const adapter = createMattermostAdapter(settings(standIn.url));
    const result = await adapter.send(CHANNEL, 'hello', AbortSignal.timeout(100));
    expect(result.status).toBe('retry');
  });
});

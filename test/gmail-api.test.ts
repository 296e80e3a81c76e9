/**
 * The Gmail API client against the local Google stand-in: watch and stop,
 * history pages (and the page bound), messages in `full` and `metadata`,
 * the typed outcomes (an expired cursor, a deleted message, one refresh on
 * 401, backoff with Retry-After, needs consent), and hostile answers.
 */
import { fc, test } from '@fast-check/vitest';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGmailApi, type GmailApiOptions } from '../engine/gmail/api.ts';
import { laterHistoryId, normaliseHistoryId } from '../engine/gmail/history-id.ts';
import { listAllHistory } from '../engine/gmail/history-pages.ts';
import { createTokenSource } from '../engine/gmail/oauth.ts';
import {
  type GmailStandIn,
  type GmailStandInOptions,
  startGmailStandIn,
} from './helpers/gmail-stand-in.ts';

const ACCOUNT = 'user+tag@example.com';
const USER_PATH = '/gmail/v1/users/user%2Btag%40example.com';

let google: GmailStandIn;

async function setup(
  standIn: GmailStandInOptions = {},
  api: Partial<GmailApiOptions> = {},
): Promise<ReturnType<typeof createGmailApi>> {
  google = await startGmailStandIn(standIn);
  const tokens = createTokenSource({
    tokenUrl: google.tokenUrl,
    clientId: google.clientId,
    clientSecret: google.clientSecret,
    refreshToken: () => google.refreshToken,
    timeoutMs: 5000,
  });
  return createGmailApi({
    tokens,
    userId: ACCOUNT,
    apiBaseUrl: google.apiBaseUrl,
    timeoutMs: 5000,
    ...api,
  });
}

let gmail: ReturnType<typeof createGmailApi>;
beforeEach(async () => {
  gmail = await setup();
});
afterEach(() => google.close());

async function restart(standIn: GmailStandInOptions, api: Partial<GmailApiOptions> = {}) {
  await google.close();
  gmail = await setup(standIn, api);
}

describe('watch and stop', () => {
  it('watch sends the topic and labels and returns the history id and expiration', async () => {
    const result = await gmail.watch({ topicName: 'projects/p/topics/t', labelIds: ['INBOX'] });
    expect(google.watchExpirations).toHaveLength(1);
    expect(result).toEqual({
      kind: 'ok',
      value: { historyId: google.historyId(), expirationMs: google.watchExpirations[0] },
    });
    expect(google.watches).toEqual([{ topicName: 'projects/p/topics/t', labelIds: ['INBOX'] }]);
    expect(google.calls[0]).toMatchObject({ method: 'POST', path: `${USER_PATH}/watch` });
  });

  it('stop ends the watch', async () => {
    expect(await gmail.stop()).toEqual({ kind: 'ok', value: null });
    expect(google.stops()).toBe(1);
  });
});

describe('history', () => {
  it('lists added message ids in order with the documented query', async () => {
    const start = google.historyId();
    const ids = [google.addMessage({ subject: 'a' }), google.addMessage({ subject: 'b' })];
    const result = await gmail.listHistory({ startHistoryId: start, labelId: 'INBOX' });
    expect(result).toEqual({
      kind: 'ok',
      value: { messageIds: ids, historyId: google.historyId() },
    });
    const query = Object.fromEntries(google.calls[0]?.query ?? []);
    expect(query).toEqual({
      startHistoryId: start,
      historyTypes: 'messageAdded',
      maxResults: '500',
      labelId: 'INBOX',
    });
  });

  it('the label filter leaves out mail without the label', async () => {
    const start = google.historyId();
    google.addMessage({ labels: ['SENT'] });
    const inbox = google.addMessage({});
    const result = await gmail.listHistory({ startHistoryId: start, labelId: 'INBOX' });
    expect(result).toMatchObject({ kind: 'ok', value: { messageIds: [inbox] } });
  });

  it('an expired start history id is cursor_expired', async () => {
    const start = google.historyId();
    google.addMessage({});
    google.expireHistory();
    expect(await gmail.listHistory({ startHistoryId: start })).toEqual({ kind: 'cursor_expired' });
  });

  it('history ids past 2^53 go through exactly', async () => {
    const big = 2n ** 60n + 1n;
    await restart({ startHistoryId: big });
    const id = google.addMessage({});
    const result = await gmail.listHistory({ startHistoryId: String(big) });
    expect(result).toEqual({
      kind: 'ok',
      value: { messageIds: [id], historyId: String(big + 1n) },
    });
  });

  it('follows every page', async () => {
    await restart({ historyPageSize: 2 });
    const start = google.historyId();
    const ids = Array.from({ length: 5 }, (_, i) => google.addMessage({ subject: `m${i}` }));
    const result = await listAllHistory(gmail, { startHistoryId: start });
    expect(result).toEqual({
      kind: 'ok',
      value: { truncated: false, messageIds: ids, historyId: google.historyId(), pages: 3 },
    });
  });

  it('stops at the page bound, says so, withholds the cursor, and resumes', async () => {
    await restart({ historyPageSize: 2 });
    const start = google.historyId();
    const ids = Array.from({ length: 5 }, () => google.addMessage({}));
    const first = await listAllHistory(gmail, { startHistoryId: start, maxPages: 2 });
    if (first.kind !== 'ok' || !first.value.truncated) throw new Error('expected a truncated run');
    expect(first.value.messageIds).toEqual(ids.slice(0, 4));
    expect(first.value).not.toHaveProperty('historyId');
    const rest = await listAllHistory(gmail, {
      startHistoryId: start,
      pageToken: first.value.resumePageToken,
      maxPages: 2,
    });
    expect(rest).toMatchObject({
      kind: 'ok',
      value: { truncated: false, messageIds: ids.slice(4), historyId: google.historyId() },
    });
  });

  it('a failure on a later page is the run outcome', async () => {
    await restart({ historyPageSize: 1 });
    const start = google.historyId();
    google.addMessage({});
    google.addMessage({});
    google.answerNext({
      status: 200,
      body: JSON.stringify({ historyId: '1', nextPageToken: 'MQ' }),
    });
    google.failNext(503);
    const result = await listAllHistory(gmail, { startHistoryId: start });
    expect(result).toEqual({ kind: 'backoff', reason: 'Gmail HTTP 503 (backendError)' });
  });

  it('repeated ids across records and pages are reported once', async () => {
    const record = (id: string) => ({
      id: '5',
      messagesAdded: [{ message: { id } }, { message: { id } }],
    });
    google.answerNext({
      status: 200,
      body: JSON.stringify({
        history: [record('a1'), record('b2')],
        historyId: '6',
        nextPageToken: 'x',
      }),
    });
    google.answerNext({
      status: 200,
      body: JSON.stringify({ history: [record('b2'), record('c3')], historyId: '7' }),
    });
    const result = await listAllHistory(gmail, { startHistoryId: '1' });
    expect(result).toMatchObject({
      kind: 'ok',
      value: { messageIds: ['a1', 'b2', 'c3'], historyId: '7' },
    });
  });
});

describe('messages', () => {
  const fixture = {
    from: 'Ada <ada@example.com>',
    to: ACCOUNT,
    subject: 'Quarterly numbers',
    date: 'Tue, 24 Nov 2026 10:00:00 +0000',
    text: 'Plain body',
    html: '<p>Html body</p>',
    attachments: [{ filename: 'report.pdf', mimeType: 'application/pdf', size: 2048 }],
  };

  it('full: the validated message with its part tree', async () => {
    const id = google.addMessage(fixture);
    const result = await gmail.getMessage(id, { format: 'full' });
    if (result.kind !== 'ok') throw new Error(`expected ok, got ${result.kind}`);
    const message = result.value;
    expect(message).toMatchObject({
      id,
      threadId: id,
      labelIds: ['INBOX', 'UNREAD'],
      snippet: 'Plain body',
    });
    expect(message.payload.mimeType).toBe('multipart/mixed');
    expect(message.payload.headers).toContainEqual({ name: 'Subject', value: 'Quarterly numbers' });
    const [alternative, attachment] = message.payload.parts;
    expect(alternative?.parts.map((p) => p.mimeType)).toEqual(['text/plain', 'text/html']);
    const plain = alternative?.parts[0]?.body.data ?? '';
    expect(Buffer.from(plain, 'base64url').toString()).toBe('Plain body');
    expect(attachment).toMatchObject({ filename: 'report.pdf', body: { size: 2048 } });
    expect(attachment?.body.attachmentId).toBeTypeOf('string');
  });

  it('metadata: the named headers only, no bodies', async () => {
    const id = google.addMessage(fixture);
    const result = await gmail.getMessage(id, {
      format: 'metadata',
      metadataHeaders: ['From', 'Subject'],
    });
    if (result.kind !== 'ok') throw new Error(`expected ok, got ${result.kind}`);
    expect(result.value.payload.headers.map((h) => h.name)).toEqual(['From', 'Subject']);
    expect(result.value.payload.parts).toEqual([]);
    expect(google.calls[0]?.query.getAll('metadataHeaders')).toEqual(['From', 'Subject']);
  });

  it('a message deleted since is not_found', async () => {
    const id = google.addMessage({});
    google.deleteMessage(id);
    expect(await gmail.getMessage(id, { format: 'full' })).toEqual({ kind: 'not_found' });
  });

  it('path injection: an id that is not a Gmail id is refused without a call', async () => {
    expect(await gmail.getMessage('../../watch', { format: 'full' })).toMatchObject({
      kind: 'failed',
    });
    expect(google.calls).toHaveLength(0);
  });
});

describe('tokens and refusals', () => {
  it('401: refreshes once and resends once', async () => {
    await gmail.stop();
    google.rotateAccessToken();
    expect(await gmail.stop()).toMatchObject({ kind: 'ok' });
    expect(google.refreshes()).toBe(2);
    expect(google.calls.map((c) => c.authorized)).toEqual([true, false, true]);
  });

  it('401 again with a fresh token is auth, without a third try', async () => {
    google.failNext(401, 5);
    await gmail
      .watch({ topicName: 'projects/p/topics/t' })
      .then((r) => expect(r).toEqual({ kind: 'auth' }));
    expect(google.calls).toHaveLength(2);
    expect(google.refreshes()).toBe(2);
  });

  it('concurrent calls rejected with one stale token share one refresh', async () => {
    await gmail.stop();
    google.rotateAccessToken();
    const results = await Promise.all([gmail.stop(), gmail.stop(), gmail.stop()]);
    expect(results.map((r) => r.kind)).toEqual(['ok', 'ok', 'ok']);
    expect(google.refreshes()).toBe(2);
  });

  it('a start history id that is not one is refused without a call', async () => {
    expect(await gmail.listHistory({ startHistoryId: '12abc' })).toMatchObject({ kind: 'failed' });
    expect(google.calls).toHaveLength(0);
  });

  it('a revoked refresh token is needs_consent', async () => {
    google.revokeRefreshToken();
    expect(await gmail.stop()).toEqual({ kind: 'needs_consent' });
    expect(google.calls).toHaveLength(0);
  });

  it.each([
    [429, 'rateLimitExceeded', '7', { kind: 'backoff', retryAfterMs: 7000 }],
    [503, undefined, undefined, { kind: 'backoff' }],
    [500, undefined, '2', { kind: 'backoff', retryAfterMs: 2000 }],
    [403, 'rateLimitExceeded', undefined, { kind: 'backoff' }],
    [403, 'userRateLimitExceeded', '3', { kind: 'backoff', retryAfterMs: 3000 }],
    [403, 'domainPolicy', undefined, { kind: 'forbidden' }],
    [403, 'dailyLimitExceeded', undefined, { kind: 'forbidden' }],
    [400, 'badRequest', undefined, { kind: 'failed' }],
  ])('HTTP %i %s (Retry-After %s) is %o', async (status, reason, retryAfter, expected) => {
    google.failNext(status, 1, { ...(reason && { reason }), ...(retryAfter && { retryAfter }) });
    const result = await gmail.listHistory({ startHistoryId: '1' });
    expect(result).toMatchObject(expected);
    if (!('retryAfterMs' in expected)) expect(result).not.toHaveProperty('retryAfterMs');
  });

  it('an unreachable Gmail is backoff', async () => {
    await restart({}, { apiBaseUrl: 'http://127.0.0.1:1' });
    expect(await gmail.stop()).toMatchObject({ kind: 'backoff' });
  });

  it("the caller's signal ends a call as aborted", async () => {
    await gmail.stop();
    google.answerNext({ status: 200, body: '{}', delayMs: 2000 });
    const abort = new AbortController();
    const pending = gmail.stop(abort.signal);
    abort.abort();
    expect(await pending).toEqual({ kind: 'aborted' });
  });
});

describe('hostile answers', () => {
  const message = {
    id: 'abc123',
    threadId: 'abc123',
    labelIds: ['INBOX'],
    snippet: 'hi',
    internalDate: '1760000000000',
    payload: { partId: '', mimeType: 'text/plain', filename: '', headers: [], body: { size: 0 } },
  };
  const getWith = async (body: string) => {
    google.answerNext({ status: 200, body });
    return gmail.getMessage('abc123', { format: 'full' });
  };
  const historyWith = async (body: string) => {
    google.answerNext({ status: 200, body });
    return gmail.listHistory({ startHistoryId: '1' });
  };
  const nested = (depth: number): object =>
    depth === 0 ? message.payload : { ...message.payload, parts: [nested(depth - 1)] };

  it('memory bomb: an endless answer is cut at the byte cap', async () => {
    await restart({}, { maxAnswerBytes: 1024 * 1024 });
    google.answerNext({ status: 200, stream: { chunk: 'x'.repeat(65_536), count: 100_000 } });
    expect(await gmail.stop()).toEqual({ kind: 'too_large', maxBytes: 1024 * 1024 });
  });

  it('deep nesting: a deeply nested answer is refused without parsing', async () => {
    expect(await historyWith('['.repeat(100_000))).toMatchObject({ kind: 'failed' });
  });

  it('precision loss: a history id past 2^53 sent as a number is refused', async () => {
    const result = await historyWith('{"historyId": 18446744073709551615}');
    expect(result).toMatchObject({ kind: 'failed', reason: expect.stringContaining('/historyId') });
  });

  it('a history id past 2^53 sent as a string is kept exactly', async () => {
    const result = await historyWith('{"historyId": "18446744073709551615"}');
    expect(result).toEqual({
      kind: 'ok',
      value: { messageIds: [], historyId: '18446744073709551615' },
    });
  });

  it.each([
    ['overflow: a history id past 2^64', '{"historyId": "18446744073709551616"}', '/historyId'],
    ['type confusion: a boolean history id', '{"historyId": true}', '/historyId'],
    ['a negative history id', '{"historyId": -1}', '/historyId'],
    ['missing history id', '{"history": []}', '/historyId'],
    [
      'type confusion: history as an object',
      '{"historyId": "5", "history": {"0": {}}}',
      '/history:',
    ],
    [
      'path injection: a message id with slashes',
      '{"historyId": "5", "history": [{"messagesAdded": [{"message": {"id": "../x"}}]}]}',
      '/message/id',
    ],
    [
      'header smuggling: a page token with CR/LF',
      '{"historyId": "5", "nextPageToken": "a\\r\\nb"}',
      '/nextPageToken',
    ],
    [
      'record flood: more records than a page holds',
      JSON.stringify({ historyId: '5', history: Array(501).fill({}) }),
      '/history:',
    ],
  ])('%s is refused', async (_attack, body, where) => {
    const result = await historyWith(body);
    expect(result).toMatchObject({ kind: 'failed', reason: expect.stringContaining(where) });
  });

  it.each([
    ['missing expiration', '{"historyId": "5"}'],
    ['expiration beyond safe integers', '{"historyId": "5", "expiration": "99999999999999999999"}'],
    ['not JSON', 'ok'],
  ])('a watch answer with %s is refused', async (_case, body) => {
    google.answerNext({ status: 200, body });
    expect(await gmail.watch({ topicName: 'projects/p/topics/t' })).toMatchObject({
      kind: 'failed',
    });
  });

  it.each([
    ['missing payload', { ...message, payload: undefined }, '/payload'],
    ['missing internalDate', { ...message, internalDate: undefined }, '/internalDate'],
    ['type confusion: labels as a string', { ...message, labelIds: 'INBOX' }, '/labelIds'],
    [
      'type confusion: a header value as an object',
      { ...message, payload: { ...message.payload, headers: [{ name: 'From', value: {} }] } },
      '/headers/0/value',
    ],
    [
      'non-base64 part data',
      { ...message, payload: { ...message.payload, body: { size: 1, data: '<script>' } } },
      '/body/data',
    ],
    ['answer swap: another message than the one asked for', { ...message, id: 'other1' }, '/id'],
    [
      'MIME bomb: parts nested past the bound',
      { ...message, payload: nested(20) },
      'nested deeper than 16',
    ],
    [
      'part flood: more parts than the bound',
      { ...message, payload: { ...message.payload, parts: Array(600).fill(message.payload) } },
      '/payload/parts:',
    ],
  ])('%s is refused', async (_attack, body, where) => {
    const result = await getWith(JSON.stringify(body));
    expect(result).toMatchObject({ kind: 'failed', reason: expect.stringContaining(where) });
  });

  it('prototype pollution: __proto__ in an answer is not copied', async () => {
    const body = JSON.stringify(message).replace(
      '{',
      '{"__proto__": {"polluted": true}, "extra": 1,',
    );
    const result = await getWith(body);
    expect(result.kind).toBe('ok');
    if (result.kind !== 'ok') return;
    expect(Object.getPrototypeOf(result.value)).toBe(Object.prototype);
    expect(result.value).not.toHaveProperty('polluted');
    expect(result.value).not.toHaveProperty('extra');
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it('endless wait: a Retry-After of years is capped at an hour', async () => {
    google.failNext(429, 1, { retryAfter: '999999999' });
    expect(await gmail.stop()).toMatchObject({ kind: 'backoff', retryAfterMs: 3_600_000 });
  });
});

describe('history id properties', () => {
  const uint64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });

  test.prop([uint64])('any unsigned 64-bit id as a string is kept exactly', (id) => {
    expect(normaliseHistoryId(String(id))).toBe(String(id));
  });

  test.prop([fc.maxSafeNat()])('any safe integer as a number becomes its decimal string', (id) => {
    expect(normaliseHistoryId(id)).toBe(String(id));
  });

  test.prop([uint64, uint64])(
    'laterHistoryId is the numeric maximum, never the text one',
    (a, b) => {
      expect(laterHistoryId(String(a), String(b))).toBe(
        String([a, b].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))[1]),
      );
    },
  );
});

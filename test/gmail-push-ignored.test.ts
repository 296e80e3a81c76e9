/**
 * Pushes the mail flow must not act on, with the real binary. A signed push
 * for another mailbox, or one whose data is not Gmail's base64 JSON, can
 * never be processed: it is acknowledged (204, so Pub/Sub does not back the
 * whole subscription off) and records nothing. A push whose token is
 * expired, for another audience, from another issuer or identity, or absent,
 * is refused (401) and records nothing. Mail waiting in the mailbox runs only
 * once a genuine push arrives, and then once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ACCOUNT,
  actionMessageIds,
  envelope,
  type GmailService,
  gmailStatus,
  storedMailState,
  historyCalls,
  sendPush,
  sendPushAnswer,
  startGmailService,
  type OidcWorld,
  startOidcWorld,
} from './helpers/gmail-binary.ts';
import type { GmailStandIn } from './helpers/gmail-stand-in.ts';
import { makeKey, type SigningKey, signToken } from './helpers/jwks-stand-in.ts';
import { tempDir } from './helpers/process.ts';
import { nowSeconds, until } from './helpers/signed-http.ts';

// A push token left in the config from token mode: in oidc mode it must open nothing.
const LEFTOVER_TOKEN = 'leftover-push-token-0123456789';
const temp = tempDir();
let gmail: GmailStandIn;
let key: SigningKey;
let service: GmailService;
let file: string;
let dataDir: string;
let waiting: string;
let pushes = 0;

let world: OidcWorld;

beforeAll(async () => {
  world = await startOidcWorld(temp.dir, { pushToken: LEFTOVER_TOKEN });
  ({ gmail, key, file, dataDir } = world);
  service = await startGmailService(file);
  await until('the first watch', () => gmail.watches.length === 1);
  await until('the start-up sync', () => historyCalls(gmail) >= 1);
  await until('the cursor', async () => (await gmailStatus(file)).cursor !== undefined);
  // New mail that any push recorded by mistake would run.
  waiting = gmail.addMessage({ from: 'ann@example.com', subject: 'Waiting', text: 'Here.' });
});
afterAll(async () => {
  await world.close();
  temp.cleanup();
});

const b64 = (text: string) => Buffer.from(text).toString('base64');
const nextId = () => `ignored-p${++pushes}`;

/** Send `body` with these headers; assert the answer and that nothing was recorded. */
async function expectNothingRecorded(
  body: unknown,
  status: number,
  headers: Record<string, string> = {},
  query = '',
): Promise<void> {
  const syncs = historyCalls(gmail);
  const answer = await sendPushAnswer(`${service.pushUrl}${query}`, body, headers);
  expect(answer.status).toBe(status);
  // RFC 9110: every 401 names its scheme; one challenge whatever was wrong, telling nothing more.
  expect(answer.challenge).toBe(status === 401 ? 'Bearer' : null);
  const after = storedMailState(dataDir);
  expect(after.pendingPushes).toBe(0);
  // No push was ever recorded before the genuine one at the end.
  expect(after.lastPushAtMs).toBeUndefined();
  expect(historyCalls(gmail)).toBe(syncs);
  expect(after.mailIds).toEqual([]);
}

describe('a signed push that can never be processed is acknowledged and records nothing', () => {
  it.each([
    ['for another mailbox', { emailAddress: 'other@example.com' }],
    ['for a mailbox that only ends like ours', { emailAddress: `x${ACCOUNT}` }],
    ['with data that is not base64', { data: '%%% not base64 %%%' }],
    ['with base64 data that is not JSON', { data: b64('hello, not json') }],
    ['with base64 JSON that is an array', { data: b64('[1,2,3]') }],
    ['with no history id', { data: b64(JSON.stringify({ emailAddress: ACCOUNT })) }],
    [
      'with a history id that is not a number',
      { data: b64(JSON.stringify({ emailAddress: ACCOUNT, historyId: 'latest' })) },
    ],
    ['with empty data', { data: '' }],
  ])('a push %s: 204', async (_, options) => {
    const body = envelope(nextId(), gmail.historyId(), options);
    await expectNothingRecorded(body, 204, { authorization: `Bearer ${await signToken(key)}` });
  });

  it.each([
    ['a body that is not JSON', 'this is not json'],
    [
      'an envelope without a message',
      JSON.stringify({ subscription: 'projects/p/subscriptions/s' }),
    ],
    ['a JSON array', '[]'],
    [
      'oversized body: a push of 100 KB',
      JSON.stringify({ ...envelope('big', '1'), pad: 'x'.repeat(100_000) }),
    ],
    [
      'deep nesting: an envelope 10 000 levels deep',
      `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`,
    ],
  ])('%s: 204', async (_, raw) => {
    await expectNothingRecorded(raw, 204, { authorization: `Bearer ${await signToken(key)}` });
  });
});

describe('a push without a valid token is refused and records nothing', () => {
  it.each([
    ['an expired token', { iat: nowSeconds() - 7200, exp: nowSeconds() - 3600 }],
    ['a token for another audience', { aud: 'https://elsewhere.example/gmail-pubsub' }],
    ['a token from another issuer', { iss: 'https://issuer.example' }],
    [
      'a token for another service account',
      { email: 'intruder@evil-project.iam.gserviceaccount.com' },
    ],
    ['a token with an unverified email', { email_verified: false }],
    ['a token issued in the future', { iat: nowSeconds() + 3600, exp: nowSeconds() + 7200 }],
  ])('%s: 401', async (_, claims) => {
    const token = await signToken(key, claims);
    await expectNothingRecorded(envelope(nextId(), gmail.historyId()), 401, {
      authorization: `Bearer ${token}`,
    });
  });

  it.each([
    ['no authorization', {}],
    ['a bearer that is not a token', { authorization: 'Bearer not-a-jwt' }],
    ['a basic credential', { authorization: `Basic ${b64('user:pass')}` }],
  ])('%s: 401', async (_, headers: Record<string, string>) => {
    await expectNothingRecorded(envelope(nextId(), gmail.historyId()), 401, headers);
  });

  it.each([
    ['in the URL', `?token=${LEFTOVER_TOKEN}`, {}],
    ['in x-gog-token', '', { 'x-gog-token': LEFTOVER_TOKEN }],
  ])('the push token %s while the mode is oidc: 401', async (_, query, headers) => {
    const body = envelope(nextId(), gmail.historyId());
    await expectNothingRecorded(body, 401, headers, query);
  });

  it('a token signed with a key the key set does not hold: 401', async () => {
    const stranger = await makeKey('k1');
    const token = await signToken(stranger);
    await expectNothingRecorded(envelope(nextId(), gmail.historyId()), 401, {
      authorization: `Bearer ${token}`,
    });
  });
});

describe('a genuine push afterwards', () => {
  it('runs the waiting mail once', async () => {
    const body = envelope(nextId(), gmail.historyId());
    expect(
      await sendPush(service.pushUrl, body, { authorization: `Bearer ${await signToken(key)}` }),
    ).toBe(204);
    await until('the waiting mail ran', async () => (await actionMessageIds(dataDir)).length > 0);
    await until('the push covered', async () => (await gmailStatus(file)).pendingPushes === 0);
    expect(await actionMessageIds(dataDir)).toEqual([waiting]);
  });
});

/**
 * Attack: the Teams token endpoint (or whatever answers at tokenUrl: a proxy, a relay) answers
 * 200 with an access_token that cannot be sent as a header value (a line break, a NUL, a
 * character past Latin-1) and an expires_in of a million years. hookgate cached the token and
 * every send after it was refused by the HTTP client before anything left, for as long as the
 * token lived (here: until a restart): no 401 ever came to drop it, so it was never fetched
 * again, and each part was retried to death under "connection failed; the message may have
 * been posted". A token that is not an OAuth bearer token's shape is no token: the send fails
 * saying so, nothing is cached, and the next send asks again.
 */
import { afterEach, expect, it } from 'vitest';
import { createTeamsAdapter } from '../engine/delivery/adapters/msteams.ts';
import { type StandIn, type StandInReply, startStandIn } from './helpers/stand-in.ts';

const CONVERSATION = '19:0a1b2c3d4e5f@thread.tacv2';

let standIn: StandIn | undefined;
afterEach(async () => {
  await standIn?.close();
  standIn = undefined;
});

it.each([
  ['a line break and a header after it', 'eyJ0eXAi.eyJhdWQi\r\nx-injected: 1'],
  ['a NUL', 'eyJ0eXAi.eyJhdWQi\u0000sig'],
  ['a character past Latin-1', 'eyJ0eXAi.eyJhdWQi€sig'],
])('a token answer holding %s, valid for ever, is not cached: the next send gets a new token and goes out', async (_what, unsendable) => {
  let tokenAnswer: StandInReply = {
    status: 200,
    body: { token_type: 'Bearer', expires_in: 3e13, access_token: unsendable },
  };
  standIn = await startStandIn((req) =>
    req.url === '/token' ? tokenAnswer : { status: 201, body: { id: '1700000000000' } },
  );
  const adapter = createTeamsAdapter({
    appId: 'app-id',
    appPassword: 'teams~S3cret.Value_123',
    tenantId: 'tenant',
    serviceUrl: `${standIn.url}/teams/`,
    tokenUrl: `${standIn.url}/token`,
    timeoutMs: 2000,
  });

  const first = await adapter.send(CONVERSATION, 'hello');
  expect(first).toEqual({
    status: 'failed',
    reason: 'Teams token request HTTP 200: no usable access_token',
  });

  // The endpoint recovers: the next send is not stuck with the token it gave before.
  tokenAnswer = {
    status: 200,
    body: { token_type: 'Bearer', expires_in: 3599, access_token: 'eyJ0eXAi.eyJhdWQi.c2ln' },
  };
  expect(await adapter.send(CONVERSATION, 'hello')).toEqual({
    status: 'sent',
    messageId: '1700000000000',
  });
  const activities = standIn.requests.filter((req) => req.url !== '/token');
  expect(activities.map((req) => req.headers.authorization)).toEqual([
    'Bearer eyJ0eXAi.eyJhdWQi.c2ln',
  ]);
});

/**
 * The shared-token push mode end to end, with the real binary and its log
 * captured at level info: a push carrying the token in `?token=` (as a
 * Pub/Sub push URL does) or in x-gog-token is acknowledged and its mail
 * runs; a wrong token or none is 401 and records nothing; the same
 * `?token=` on the hook endpoints is still refused (400 token_in_query); and
 * neither the token nor any Google secret reaches the log.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  actionMessageIds,
  envelope,
  type GmailService,
  gmailConfigFile,
  gmailStatus,
  HOOK_TOKEN,
  historyCalls,
  sendPushAnswer,
  startGmailService,
} from './helpers/gmail-binary.ts';
import { type GmailStandIn, startGmailStandIn } from './helpers/gmail-stand-in.ts';
import { killAll, tempDir } from './helpers/process.ts';
import { until } from './helpers/signed-http.ts';

const PUSH_TOKEN = 'push-secret-token-4f1c9a7e2b6d';
const temp = tempDir();
let gmail: GmailStandIn;
let service: GmailService;
let file: string;
let dataDir: string;
let pushes = 0;
const expected: string[] = [];

beforeAll(async () => {
  gmail = await startGmailStandIn();
  ({ file, dataDir } = gmailConfigFile(
    temp.dir,
    gmail,
    { mode: 'token' },
    { pushToken: PUSH_TOKEN },
  ));
  service = await startGmailService(file);
  await until('the first watch', () => gmail.watches.length === 1);
  await until('the start-up sync', () => historyCalls(gmail) >= 1);
  await until('the cursor', async () => (await gmailStatus(file)).cursor !== undefined);
});
afterAll(async () => {
  await killAll();
  await gmail.close();
  temp.cleanup();
});

/** A push for the current history id to the push listener, with `query` and `headers`. */
async function push(query: string, headers: Record<string, string> = {}): Promise<number> {
  pushes++;
  const answer = await sendPushAnswer(
    `${service.pushUrl}${query}`,
    envelope(`token-p${pushes}`, gmail.historyId()),
    headers,
  );
  // RFC 9110: every 401 names how to authenticate. The token is no bearer credential: the
  // challenge names the header it goes in, the same whatever was wrong.
  expect(answer.challenge).toBe(answer.status === 401 ? 'x-gog-token' : null);
  return answer.status;
}

const log = () => service.stdout() + service.stderr();

describe('push with the shared token', () => {
  it.each([
    ['in the push URL (?token=)', `?token=${PUSH_TOKEN}`, {}],
    ['in x-gog-token', '', { 'x-gog-token': PUSH_TOKEN }],
  ])('the token %s is accepted and the new mail runs', async (_, query, headers) => {
    expected.push(gmail.addMessage({ from: 'ann@example.com', subject: 'Hi', text: 'Hello.' }));
    expect(await push(query, headers)).toBe(204);
    await until(
      'the new message ran',
      async () => (await actionMessageIds(dataDir)).length === expected.length,
    );
    expect(await actionMessageIds(dataDir)).toEqual([...expected].sort());
  });
});

describe('push without the right token', () => {
  it.each([
    ['a wrong token in the URL', `?token=${PUSH_TOKEN}x`, {}],
    ['a wrong token in x-gog-token', '', { 'x-gog-token': 'wrong-token-0123456789abc' }],
    ['the hook token instead', `?token=${HOOK_TOKEN}`, {}],
    ['no token', '', {}],
    ['an empty token', '?token=', {}],
    ['the token as a bearer', '', { authorization: `Bearer ${PUSH_TOKEN}` }],
  ])('%s is 401 and records nothing', async (_, query, headers) => {
    const mail = gmail.addMessage({ from: 'eve@example.com', subject: 'Forged', text: 'x' });
    const before = await gmailStatus(file);
    const syncs = historyCalls(gmail);
    expect(await push(query, headers)).toBe(401);
    const after = await gmailStatus(file);
    expect(after.pendingPushes).toBe(0);
    expect(after.lastPushAtMs).toBe(before.lastPushAtMs);
    expect(historyCalls(gmail)).toBe(syncs);
    expect(await actionMessageIds(dataDir)).not.toContain(mail);
    // Leave the forged-for mail out of the next tests: a real push would run it.
    gmail.deleteMessage(mail);
  });
});

describe("the push listener's refusals", () => {
  const at = (path: string) => `${new URL(service.pushUrl).origin}${path}`;
  it.each([
    ['a wrong token', () => `${service.pushUrl}?token=wrong`, 'POST', 401, 'unauthorized'],
    ['another path', () => at('/other'), 'POST', 404, 'not_found'],
    ['a GET', () => service.pushUrl, 'GET', 405, 'method_not_allowed'],
  ])('%s: %i with the JSON error every listener writes', async (_, url, method, status, code) => {
    const res = await fetch(url(), {
      method,
      ...(method === 'POST' && {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(envelope('refused', gmail.historyId())),
      }),
    });
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const body = (await res.json()) as { ok: boolean; error: { code: string; message: string } };
    expect(body).toEqual({ ok: false, error: { code, message: expect.any(String) } });
    expect(body.error.message).not.toContain(PUSH_TOKEN);
  });

  it.each(['GET', 'PUT', 'DELETE'])(
    'a %s on the push path: 405 naming POST in Allow, as the hook listener does',
    async (method) => {
      const res = await fetch(service.pushUrl, { method });
      await res.arrayBuffer();
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    },
  );
});

describe('the push token on the hook endpoints', () => {
  it.each([
    ['/hooks/gmail', PUSH_TOKEN],
    ['/hooks/wake', PUSH_TOKEN],
    ['/hooks/gmail', HOOK_TOKEN],
  ])('%s?token= is still refused with 400 token_in_query', async (hookPath, token) => {
    const before = (await actionMessageIds(dataDir)).length;
    const res = await fetch(`${service.url}${hookPath}?token=${token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        text: 'wake up',
        source: 'gmail',
        messages: [{ id: 'm1', from: 'a@example.com', subject: 's', snippet: 'x' }],
      }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string } };
    expect(body.error.code).toBe('token_in_query');
    expect((await actionMessageIds(dataDir)).length).toBe(before);
  });
});

describe('the log', () => {
  it('says what happened to each push and never contains a token or secret', async () => {
    await until('the refusals logged', () => log().includes('gmail push refused'));
    await until('the accepted pushes logged', () => log().includes('"msg":"gmail push"'));
    await until('the hook refusals logged', () => log().includes('"code":"token_in_query"'));
    service.child.kill('SIGTERM');
    expect(await service.waitForExit()).toEqual({ code: 0, signal: null });
    const text = log();
    expect(text).toContain('gmail push refused');
    expect(text).not.toContain(PUSH_TOKEN);
    expect(text).not.toContain(HOOK_TOKEN);
    // Nor Google's secrets the flow holds: the client secret, the refresh and access tokens.
    expect(text).not.toContain(gmail.clientSecret);
    expect(text).not.toContain(gmail.refreshToken);
    expect(text).not.toContain('ya29.');
  });
});

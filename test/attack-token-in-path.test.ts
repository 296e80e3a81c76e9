/**
 * Attack (or a sender's mistake): the hook token put in the URL path, `POST /hooks/<token>`.
 * With the token also in its header, it was answered 404 with the token in the message, and
 * the request line logged it as the hook's name: the token in logs and in every proxy's access
 * log. The path's token is refused as the query's is (400 token_in_path, before
 * authentication, not counted) when the request also presents it in its header; without the
 * header the answer is a wrong name's (attack-token-guess-oracle.test.ts). Either way the line
 * names the path as holding it; so is the token at the start or end of a segment
 * (`/hooks/<token>.json`), compared in constant time there.
 */
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createUrlTokenCheck } from '../engine/auth.ts';
import { startTestServer, TOKEN, type TestServer, tempDir } from './helpers/hookgate.ts';
import { readLogLines } from './helpers/log-lines.ts';
import { waitFor } from './helpers/runtime.ts';

const temp = tempDir();
const logFile = path.join(temp.dir, 'service.log');
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { logFile });
});
afterAll(async () => {
  await server.stop();
  temp.cleanup();
});

it.each([
  ['as the hook name, with the token in its header too', `/hooks/${TOKEN}`, true],
  ['as the hook name, without a header', `/hooks/${TOKEN}`, false],
  ['as a later segment', `/hooks/wake/${TOKEN}`, true],
  ['with a suffix', `/hooks/${TOKEN}.json`, false],
  ['with a prefix, in a later segment', `/hooks/wake/x${TOKEN}`, true],
])(
  'the token %s: never echoed or logged; 400 token_in_path only with the header',
  async (_name, url, header) => {
    const res = await fetch(`${server.url}${url}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(header && { authorization: `Bearer ${TOKEN}` }),
      },
      body: JSON.stringify({ text: 'x' }),
    });
    const text = await res.text();
    // Without the header, the answer is a wrong name's (401, no credential): it confirms no guess.
    const expected = header
      ? { status: 400, code: 'token_in_path' }
      : { status: 401, code: 'unauthorized' };
    expect({ status: res.status, code: JSON.parse(text).error.code }).toEqual(expected);
    expect(text).not.toContain(TOKEN);
    const requestId = res.headers.get('x-request-id');
    await waitFor('its request line', () =>
      readLogLines(logFile).some((line) => line['requestId'] === requestId),
    );
    const line = readLogLines(logFile).find((l) => l['requestId'] === requestId);
    expect(line).toMatchObject({ ...expected, hook: '(holds the hook token)' });
    expect(JSON.stringify(line)).not.toContain(TOKEN);
  },
);

it('an ordinary hook name is served as before', async () => {
  expect((await server.post('wake', { text: 'fine' })).status).toBe(200);
});

/** Every character of `text` percent-encoded (`%74%65...`), `rounds` times. */
function encoded(text: string, rounds = 1): string {
  let out = text;
  for (let i = 0; i < rounds; i++)
    out = [...out].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
  return out;
}

/** POST `url` with the token in its header; the answer's error code, text and logged line. */
async function postWithToken(url: string) {
  const res = await fetch(`${server.url}${url}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ text: 'x' }),
  });
  const text = await res.text();
  const requestId = res.headers.get('x-request-id');
  await waitFor('its request line', () =>
    readLogLines(logFile).some((line) => line['requestId'] === requestId),
  );
  const line = readLogLines(logFile).find((l) => l['requestId'] === requestId);
  return {
    status: res.status,
    code: JSON.parse(text).error?.code,
    text,
    line: JSON.stringify(line),
  };
}

it.each([
  ['percent-encoded, as the hook name', `/hooks/${encoded(TOKEN)}`],
  ['percent-encoded twice, in a later segment', `/hooks/wake/${encoded(TOKEN, 2)}`],
  ['with only its dashes encoded', `/hooks/${TOKEN.replaceAll('-', '%2D')}`],
])('the token %s: 400 token_in_path, never logged in any form', async (_name, url) => {
  const { status, code, text, line } = await postWithToken(url);
  expect({ status, code }).toEqual({ status: 400, code: 'token_in_path' });
  for (const form of [TOKEN, url.slice(url.lastIndexOf('/') + 1)]) {
    expect(text).not.toContain(form);
    expect(line).not.toContain(form);
  }
});

it.each([
  ['as the value of a parameter of another name', `/hooks/wake?key=${TOKEN}`],
  ['as a parameter name', `/hooks/wake?${TOKEN}`],
  ['percent-encoded, as a value', `/hooks/wake?a=1&sig=${encoded(TOKEN)}`],
  ['with a prefix, as a value', `/hooks/wake?a=1;b=Bearer+${TOKEN}`],
])('the token in the query %s: 400 token_in_query', async (_name, url) => {
  const { status, code, line } = await postWithToken(url);
  expect({ status, code }).toEqual({ status: 400, code: 'token_in_query' });
  expect(line).not.toContain(TOKEN);
});

it('a query that does not hold the token is served as before', async () => {
  const { status } = await postWithToken('/hooks/wake?source=ci&build=42');
  expect(status).toBe(200);
});

it('a short token (the schema allows one) is looked for as a whole part only, not in longer names', () => {
  const check = createUrlTokenCheck('git');
  expect(check.inPath('github')).toBe(false);
  expect(check.inPath('ci/git')).toBe(true);
  expect(check.inQuery('repo=github')).toBe(false);
  expect(check.inQuery('key=git')).toBe(true);
});

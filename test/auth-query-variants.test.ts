/**
 * Token in the query string, in the disguises servers and frameworks in front
 * of hookgate may still read as a token parameter: `;` separators, dashes for
 * underscores, dots or blanks for underscores, double percent-encoding,
 * `name[]` and `name[a][b]` arrays, a NUL-ended name.
 * Each is refused with 400 token_in_query over real HTTP, nothing stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';

describe('token in the query, disguised', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({});
  });
  afterAll(() => server.stop());

  it.each([
    ['a semicolon separator', `?a=1;token=${TOKEN}`],
    ['a semicolon separator before a percent-encoded name', `?a=1;%20TOKEN=${TOKEN}`],
    ['a dash for the underscore', `?access-token=${TOKEN}`],
    ['the token header name with underscores', `?X_HOOKGATE_TOKEN=${TOKEN}`],
    ['a double percent-encoded name', `?%2574oken=${TOKEN}`],
    ['an array name', `?token[]=${TOKEN}`],
    ['a percent-encoded array name', `?Auth_Token%5B0%5D=${TOKEN}`],
    ['a NUL-ended name', `?hook_token%00=${TOKEN}`],
    ['a nested array name', `?token[a][b]=${TOKEN}`],
    ['a dot for the underscore (PHP reads it as one)', `?access.token=${TOKEN}`],
    ['a blank for the underscore (PHP reads it as one)', `?auth%20token=${TOKEN}`],
  ])('query with %s is refused with 400 token_in_query', async (_name, query) => {
    const res = await fetch(`${server.url}/hooks/wake${query}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ text: 'x' }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string } };
    expect(body.error.code).toBe('token_in_query');
    expect(await server.store.listActions({ limit: 10 })).toHaveLength(0);
  });

  it.each(['?tokens=x', '?page-token=x', '?token.x=1', '?x=a;b'])(
    '%s is an ordinary parameter',
    async (query) => {
      const res = await fetch(`${server.url}/hooks/wake${query}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ text: 'x' }),
      });
      expect(res.status).toBe(200);
    },
  );
});

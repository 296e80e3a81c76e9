/**
 * Attack on the admin listener's routing: a request target starting with two slashes
 * (`//evil.example/`, `//x/api/requests`). The path was read as a URL relative to a base, which
 * takes `//x` for a host: `GET //x/api/requests` was answered as `/api/requests`, so a path rule
 * in a proxy in front (`/api/` for operators only) was passed by a path it does not see as
 * `/api/`, and `//evil.example/` served the console; the same reader resolved `/x/../api/...`,
 * `%2e%2e` and backslashes. The target's path is now matched as it is sent (the absolute form's,
 * as on the hook listener): such a path is 404 not_found.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { parseAnswers, rawExchange } from './helpers/raw-http.ts';

describe('attack: a request target a URL reader rewrites (two slashes, dot segments, backslashes)', () => {
  let stack: AdminStack;
  beforeAll(async () => {
    stack = await startAdminStack({});
  });
  afterAll(async () => {
    await stack?.stop();
  });

  async function get(target: string): Promise<{ status: number; body: string }> {
    const { port } = new URL(stack.admin.url);
    const request = `GET ${target} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nauthorization: Bearer ${ADMIN_TOKEN}\r\nconnection: close\r\n\r\n`;
    const [answer] = parseAnswers(await rawExchange(stack.admin.url, request));
    return answer ?? { status: 0, body: '' };
  }

  it.each([
    '//x/api/requests',
    '//evil.example/',
    '//x/readyz',
    '//healthz/api/info',
    // Dot segments, encoded or not, and backslashes, which a URL reader resolves.
    '/x/../api/requests',
    '/x/%2e%2e/api/requests',
    '/x/.%2E/api/requests',
    '/x\\..\\api/requests',
    '/./api/requests',
    '/api/./requests',
    '/console/../healthz',
  ])('%s is 404 not_found', async (target) => {
    const answer = await get(target);
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.body || '{}')).toMatchObject({
      ok: false,
      error: { code: 'not_found' },
    });
  });

  it.each([
    ['/api/requests?limit=1', '{"requests":[]}'],
    ['/healthz', '{"status":"ok"}'],
  ])('%s is answered as before, in origin and absolute form', async (path, body) => {
    for (const target of [path, `http://admin.example${path}`]) {
      const answer = await get(target);
      expect([answer.status, answer.body]).toEqual([200, body]);
    }
  });
});

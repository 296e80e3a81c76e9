/**
 * Attack: a message the admin listener's HTTP parser refuses (headers past its limit, a
 * request line or header it cannot read) is answered by hookgate itself, past the admin
 * handler. That answer must carry what every other admin answer carries (nothing cached,
 * nothing sniffed, no referrer), or a cache or a browser may keep or sniff it; and its body
 * is JSON with a stable code.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { parseAnswer, rawExchange } from './helpers/raw-http.ts';

// Headers every admin answer carries (engine/admin/reply.ts).
const ALWAYS = ['cache-control', 'x-content-type-options', 'referrer-policy'] as const;

let stack: AdminStack;
beforeAll(async () => {
  stack = await startAdminStack();
}, 60_000);
afterAll(async () => {
  await stack?.stop();
});

describe('attack: admin parser refusals without the admin headers', () => {
  it.each([
    [
      'headers past the parser limit',
      431,
      'headers_too_large',
      `GET /api/requests HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Fill: ${'a'.repeat(20_000)}\r\n`,
    ],
    ['a request line it cannot read', 400, 'bad_request', 'GARBAGE\r\nHost: 127.0.0.1\r\n'],
    [
      'a header without a colon',
      400,
      'bad_request',
      'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nbroken\r\n',
    ],
  ])('%s: %d %s carries the headers of every admin answer', async (_name, status, code, head) => {
    const ordinary = parseAnswer(
      await rawExchange(
        stack.admin.url,
        'GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
          `Authorization: Bearer ${ADMIN_TOKEN}\r\nConnection: close\r\n\r\n`,
      ),
    );
    expect(ordinary.status).toBe(404);
    const refused = parseAnswer(
      await rawExchange(
        stack.admin.url,
        `${head}Authorization: Bearer ${ADMIN_TOKEN}\r\nConnection: close\r\n\r\n`,
      ),
    );
    expect(refused.status).toBe(status);
    expect(refused.body).toMatchObject({ ok: false, error: { code } });
    expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
    for (const name of ALWAYS) {
      expect(refused.headers[name], name).toBeDefined();
      expect(refused.headers[name], name).toBe(ordinary.headers[name]);
    }
    expect(refused.headers['cache-control']).toBe('no-store');
    expect(refused.headers['x-content-type-options']).toBe('nosniff');
  });

  it("the hook listener's parser refusals stay as its other JSON answers (no admin headers)", async () => {
    const refused = parseAnswer(
      await rawExchange(stack.hooksUrl, 'GARBAGE\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
    );
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ ok: false, error: { code: 'bad_request' } });
    expect(refused.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(refused.headers['referrer-policy']).toBeUndefined();
  });
});

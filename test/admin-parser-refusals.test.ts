/**
 * Messages Node's HTTP parser refuses on the admin listener (headers past its limit, a
 * request line it cannot read) are answered as JSON with a stable code, as on the hook
 * listener, not with Node's empty-bodied 431 or 400.
 */
import { STATUS_CODES } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { parseAnswer, rawExchange } from './helpers/raw-http.ts';

const stacks: AdminStack[] = [];
afterEach(async () => {
  await Promise.all(stacks.splice(0).map((stack) => stack.stop()));
});

describe('admin listener: messages the HTTP parser refuses', () => {
  it.each([
    [
      'a 20 KB query string (headers past the limit)',
      431,
      'headers_too_large',
      `GET /api/requests?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n`,
    ],
    ['a request line it cannot read', 400, 'bad_request', 'GARBAGE\r\nHost: 127.0.0.1\r\n'],
    [
      'a header without a colon',
      400,
      'bad_request',
      'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nbroken\r\n',
    ],
  ])('%s: %d %s as JSON', async (_name, status, code, head) => {
    const s = await startAdminStack();
    stacks.push(s);
    const answer = parseAnswer(
      await rawExchange(
        s.admin.url,
        `${head}Authorization: Bearer ${ADMIN_TOKEN}\r\nConnection: close\r\n\r\n`,
      ),
    );
    expect(answer.statusLine).toBe(`HTTP/1.1 ${status} ${STATUS_CODES[status]}`);
    expect(answer.body).toMatchObject({ ok: false, error: { code } });
  });
});

describe('admin listener: a body the HTTP parser refuses part way', () => {
  it('a bad chunk size in a POST body is 400 bad_request, as on the hook listener, not invalid_json', async () => {
    const s = await startAdminStack();
    stacks.push(s);
    const answer = parseAnswer(
      await rawExchange(
        s.admin.url,
        'POST /api/playground HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
          `Authorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: application/json\r\n` +
          'Transfer-Encoding: chunked\r\n\r\n5\r\n{"hoo\r\nZZZ\r\n',
      ),
    );
    expect(answer.statusLine).toBe('HTTP/1.1 400 Bad Request');
    expect(answer.body).toMatchObject({ ok: false, error: { code: 'bad_request' } });
  });
});

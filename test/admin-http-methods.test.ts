/**
 * The admin listener speaks HTTP as monitors and tools expect: HEAD is
 * answered wherever GET is (an uptime check's HEAD /healthz was 405), a
 * 405 names the methods the path takes in `Allow`, and a 401 carries the
 * `WWW-Authenticate: Bearer` challenge, as the hook listener's answers do.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type AdminStack, startAdminStack } from './helpers/admin.ts';

const stacks: AdminStack[] = [];
afterEach(async () => {
  await Promise.all(stacks.splice(0).map((stack) => stack.stop()));
});

async function stack(): Promise<AdminStack> {
  const s = await startAdminStack(
    {},
    {
      metrics: { contentType: 'text/plain; version=0.0.4', render: async () => 'hookgate_up 1\n' },
    },
  );
  stacks.push(s);
  return s;
}

describe('admin listener: HTTP methods', () => {
  it.each(['/healthz', '/readyz', '/metrics', '/api/info', '/api/requests', '/', '/console.js'])(
    'HEAD %s is answered as GET is, without a body',
    async (path) => {
      const s = await stack();
      const get = await s.adminFetch(path);
      const getBody = Buffer.from(await get.arrayBuffer());
      const head = await s.adminFetch(path, { method: 'HEAD' });
      expect(head.status).toBe(get.status);
      expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
      expect(head.headers.get('content-length')).toBe(String(getBody.length));
      expect((await head.arrayBuffer()).byteLength).toBe(0);
    },
  );

  it('HEAD /api/stream answers the stream headers and ends, holding no stream', async () => {
    const s = await stack();
    for (let i = 0; i < 20; i += 1) {
      const head = await s.adminFetch('/api/stream', { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      expect((await head.arrayBuffer()).byteLength).toBe(0);
    }
  });

  it.each([
    ['DELETE', '/healthz', 'GET, HEAD'],
    ['POST', '/metrics', 'GET, HEAD'],
    ['OPTIONS', '/api/requests', 'GET, HEAD'],
    ['GET', '/api/playground', 'POST'],
    ['HEAD', '/api/runs/abc/retry', 'POST'],
    ['PUT', '/', 'GET, HEAD'],
  ])('%s %s is 405 method_not_allowed with Allow: %s', async (method, path, allow) => {
    const s = await stack();
    const res = await s.adminFetch(path, {
      method,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe(allow);
    if (method !== 'HEAD')
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
        'method_not_allowed',
      );
  });

  it.each([null, 'wrong-token'])(
    'a 401 (token %s) carries WWW-Authenticate: Bearer',
    async (token) => {
      const s = await stack();
      const res = await s.adminFetch('/api/info', { token });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    },
  );
});

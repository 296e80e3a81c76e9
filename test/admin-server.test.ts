/**
 * The admin listener over real HTTP, next to a real hookgate: the token,
 * the probes, metrics, methods and paths, the Host and Origin checks, body
 * bounds, the journal's bounds, and that no token, signature or secret
 * reaches any answer even with keepPayloads on.
 */
import { createHmac } from 'node:crypto';
import { request, STATUS_CODES } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { TOKEN } from './helpers/hookgate.ts';
import { parseAnswer, rawExchange } from './helpers/raw-http.ts';

const stacks: AdminStack[] = [];
afterEach(async () => {
  await Promise.all(stacks.splice(0).map((stack) => stack.stop()));
});

async function stack(...args: Parameters<typeof startAdminStack>): Promise<AdminStack> {
  const started = await startAdminStack(...args);
  stacks.push(started);
  return started;
}

/** A request with headers fetch will not set as given (Host), answered as status and JSON. */
function raw(
  url: string,
  init: { method?: string; path: string; headers: Record<string, string>; body?: string },
): Promise<{ status: number; body: { error?: { code: string } } }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        method: init.method ?? 'GET',
        path: init.path,
        headers: init.headers,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text || '{}') }),
        );
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

// biome-ignore lint/suspicious/noExplicitAny: the answers are read as the console reads them, loosely.
type Loose = Record<string, any>;

async function json(res: Response): Promise<Loose> {
  return (await res.json()) as Loose;
}

describe('admin listener: who may use it', () => {
  it.each([
    ['no Authorization header', null],
    ['a wrong token', 'not-the-admin-token'],
    ['the hook token', TOKEN],
  ])('refuses %s with 401 unauthorized', async (_name, token) => {
    const s = await stack();
    for (const path of ['/readyz', '/metrics', '/api/requests', '/api/info', '/nope']) {
      const res = await s.adminFetch(path, { token });
      expect(res.status).toBe(401);
      expect((await json(res)).error.code).toBe('unauthorized');
    }
  });

  it('serves the page and its files without the token; /healthz and the data only with it', async () => {
    const s = await stack();
    expect((await s.adminFetch('/healthz', { token: null })).status).toBe(401);
    const health = await s.adminFetch('/healthz');
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const page = await s.adminFetch('/', { token: null });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect((await s.adminFetch('/console.js', { token: null })).status).toBe(200);
    expect((await s.adminFetch('/console.css', { token: null })).status).toBe(200);
    expect((await s.adminFetch('/api/info')).status).toBe(200);
  });

  // Without an icon of its own a browser asks for /favicon.ico, which the token refuses (401):
  // an error in every browser's console. The page names its icon, served as its other files.
  it('names its icon, served without the token', async () => {
    const s = await stack();
    const page = await (await s.adminFetch('/', { token: null })).text();
    expect(page).toContain('<link rel="icon" href="/icon.svg"');
    const icon = await s.adminFetch('/icon.svg', { token: null });
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(await icon.text()).toMatch(/^<svg /);
  });

  it('sends the security headers with the page', async () => {
    const s = await stack();
    const page = await s.adminFetch('/', { token: null });
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(await page.text()).not.toMatch(/<script>|<script(?![^>]*src=)/);
  });

  it('without a token: a foreign Host (DNS rebinding) is refused, loopback names pass', async () => {
    const s = await stack({}, { admin: { token: null } });
    const port = new URL(s.admin.url).port;
    const evil = await raw(s.admin.url, {
      path: '/api/info',
      headers: { host: `evil.example:${port}` },
    });
    expect(evil).toMatchObject({ status: 403, body: { error: { code: 'forbidden_host' } } });
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, '[::1]']) {
      expect((await raw(s.admin.url, { path: '/api/info', headers: { host } })).status).toBe(200);
    }
  });

  it.each([
    ['with the token', ADMIN_TOKEN],
    ['loopback only, no token', null],
  ])('%s: a POST from a foreign Origin (CSRF) is refused', async (_name, token) => {
    const s = await stack({}, { admin: { token } });
    const headers: Record<string, string> = {
      host: new URL(s.admin.url).host,
      origin: 'http://evil.example',
      'content-type': 'application/json',
    };
    if (token) headers['authorization'] = `Bearer ${token}`;
    const body = JSON.stringify({ hook: 'wake', payload: '{"text":"x"}' });
    const res = await raw(s.admin.url, { method: 'POST', path: '/api/playground', headers, body });
    expect(res).toMatchObject({ status: 403, body: { error: { code: 'forbidden_origin' } } });
    // The console's own origin passes.
    headers['origin'] = s.admin.url;
    const same = await raw(s.admin.url, { method: 'POST', path: '/api/playground', headers, body });
    expect(same.status).toBe(200);
  });

  it.each(['/api/playground', '/api/runs/abc/retry', '/api/requests/abc/replay'])(
    'a form post (text/plain, no preflight) to %s is refused with 415',
    async (path) => {
      const s = await stack({}, { admin: { token: null } });
      const res = await s.adminFetch(path, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: JSON.stringify({ hook: 'wake', payload: '{}' }),
      });
      expect(res.status).toBe(415);
      expect((await json(res)).error.code).toBe('unsupported_media_type');
    },
  );

  it.each([
    ['no Host header', 400, 'invalid_host', ''],
    ['two Host headers', 400, 'invalid_host', 'Host: 127.0.0.1\r\nHost: 127.0.0.1\r\n'],
    ['Expect: foo', 417, 'expectation_failed', 'Host: 127.0.0.1\r\nExpect: foo\r\n'],
    [
      'Transfer-Encoding: gzip, chunked',
      501,
      'unsupported_transfer_encoding',
      'Host: 127.0.0.1\r\nTransfer-Encoding: gzip, chunked\r\n',
    ],
    [
      'Content-Encoding: gzip',
      415,
      'unsupported_content_encoding',
      'Host: 127.0.0.1\r\nContent-Encoding: gzip\r\nContent-Length: 0\r\n',
    ],
  ])('a request framed with %s: %d %s as JSON', async (_name, status, code, head) => {
    const s = await stack();
    const answer = parseAnswer(
      await rawExchange(
        s.admin.url,
        `POST /api/playground HTTP/1.1\r\n${head}Authorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n`,
      ),
    );
    expect(answer.statusLine).toBe(`HTTP/1.1 ${status} ${STATUS_CODES[status]}`);
    expect(answer.body).toMatchObject({ ok: false, error: { code } });
  });

  it('a request line of HTTP/2.0 (read by the HTTP/1 parser): 505 http_version_not_supported as JSON', async () => {
    const s = await stack();
    const answer = parseAnswer(
      await rawExchange(
        s.admin.url,
        `POST /api/playground HTTP/2.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n`,
      ),
    );
    expect(answer.statusLine).toBe(`HTTP/1.1 505 ${STATUS_CODES[505]}`);
    expect(answer.body).toMatchObject({ ok: false, error: { code: 'http_version_not_supported' } });
  });

  it('caps the live streams: past 16 the next is 503 too_many_streams', async () => {
    const s = await stack();
    const open = await Promise.all(Array.from({ length: 16 }, () => s.adminFetch('/api/stream')));
    expect(open.map((res) => res.status)).toEqual(Array(16).fill(200));
    const refused = await s.adminFetch('/api/stream');
    expect(refused.status).toBe(503);
    expect((await json(refused)).error.code).toBe('too_many_streams');
    await Promise.all(open.map((res) => res.body?.cancel()));
  });
});

describe('admin listener: endpoints', () => {
  it('/readyz answers 200 or 503 with the readiness JSON', async () => {
    let ready = true;
    const s = await stack(
      {},
      {
        readiness: async () => ({
          ready,
          checks: { store: { ok: ready, ...(!ready && { detail: 'closed' }) } },
        }),
      },
    );
    const up = await s.adminFetch('/readyz');
    expect(up.status).toBe(200);
    expect(await up.json()).toEqual({ ready: true, checks: { store: { ok: true } } });
    ready = false;
    const down = await s.adminFetch('/readyz');
    expect(down.status).toBe(503);
    expect(await down.json()).toEqual({
      ready: false,
      checks: { store: { ok: false, detail: 'closed' } },
    });
  });

  it('/metrics is 404 without metrics and the rendered text with them', async () => {
    const none = await stack();
    const missing = await none.adminFetch('/metrics');
    expect(missing.status).toBe(404);
    expect((await json(missing)).error.code).toBe('not_found');
    const s = await stack(
      {},
      {
        metrics: {
          contentType: 'text/plain; version=0.0.4',
          render: async () => 'hookgate_up 1\n',
        },
      },
    );
    const res = await s.adminFetch('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4');
    expect(await res.text()).toBe('hookgate_up 1\n');
  });

  it.each([
    ['POST', '/healthz'],
    ['POST', '/readyz'],
    ['GET', '/api/playground'],
    ['DELETE', '/api/requests'],
    ['PUT', '/'],
  ])('%s %s is 405 method_not_allowed', async (method, path) => {
    const s = await stack();
    const res = await s.adminFetch(path, {
      method,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(405);
    expect((await json(res)).error.code).toBe('method_not_allowed');
  });

  it.each(['/nope', '/api', '/api/requests/x/y', '/healthz/', '/metrics.txt'])(
    '%s is 404 not_found',
    async (path) => {
      const s = await stack();
      const res = await s.adminFetch(path);
      expect(res.status).toBe(404);
      expect((await json(res)).error.code).toBe('not_found');
    },
  );

  it('oversized body: a playground request past the bound is 413 payload_too_large', async () => {
    const s = await stack({ hooks: { maxBodyBytes: 1024 } });
    const res = await s.adminFetch('/api/playground', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ hook: 'wake', payload: 'x'.repeat(200_000) }),
    });
    expect(res.status).toBe(413);
    expect((await json(res)).error.code).toBe('payload_too_large');
  });

  it('the playground runs a request through the config: trace, actions, policy', async () => {
    const s = await stack({
      hooks: {
        mappings: [
          {
            id: 'issues',
            match: { path: 'gh', source: 'issues' },
            templates: { message: 'issue' },
          },
          { id: 'push', match: { path: 'gh' }, templates: { message: 'Push by {{payload.who}}' } },
        ],
      },
    });
    const res = await s.adminFetch('/api/playground', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ hook: 'gh', payload: JSON.stringify({ who: 'ada' }) }),
    });
    expect(res.status).toBe(200);
    const { result } = await json(res);
    expect(result.status).toBe(200);
    expect(result.mappingId).toBe('push');
    expect(result.trace).toEqual([
      { mappingId: 'issues', outcome: 'source' },
      { mappingId: 'push', outcome: 'matched' },
    ]);
    expect(result.actions[0]).toMatchObject({ kind: 'agent', message: 'Push by ada' });
  });

  it('retry without a runtime is 503 runtime_off', async () => {
    const s = await stack();
    const res = await s.adminFetch('/api/runs/abc/retry', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(503);
    expect((await json(res)).error.code).toBe('runtime_off');
  });
});

describe('admin listener: the journal', () => {
  it('keeps the last recentRequests, newest first', async () => {
    const s = await stack({}, { admin: { recentRequests: 10 } });
    for (let i = 0; i < 15; i += 1) {
      expect((await s.post('wake', { text: `wake ${i}` })).status).toBe(200);
    }
    const { requests } = await json(await s.adminFetch('/api/requests'));
    expect(requests).toHaveLength(10);
    const list = s.journal.list();
    expect(requests.map((r: { id: string }) => r.id)).toEqual(list.map((r) => r.id));
    const [newest] = list;
    const detail = await json(await s.adminFetch(`/api/requests/${newest?.id}`));
    expect(detail.request.actions[0].prompt).toContain('wake 14');
  });

  it('records refusals with their code, and filters by status, route and id', async () => {
    const s = await stack();
    expect((await s.post('wake', { text: 'ok' })).status).toBe(200);
    expect((await s.post('wake', { text: 'no' }, { token: 'wrong' })).status).toBe(401);
    const refused = await json(await s.adminFetch('/api/requests?status=4xx'));
    expect(refused.requests).toHaveLength(1);
    expect(refused.requests[0]).toMatchObject({ status: 401, code: 'unauthorized', hook: 'wake' });
    const accepted = await json(await s.adminFetch('/api/requests?status=200&route=wake'));
    expect(accepted.requests).toHaveLength(1);
    const actionId = accepted.requests[0].actionIds[0];
    const byAction = await json(await s.adminFetch(`/api/requests?q=${actionId}`));
    expect(byAction.requests.map((r: { id: string }) => r.id)).toEqual([accepted.requests[0].id]);
  });

  it('never keeps a token, a signature or a secret, even with keepPayloads on', async () => {
    const secret = 'gh-webhook-secret-abcdef';
    const s = await stack(
      {
        hooks: {
          mappings: [
            {
              id: 'gh',
              match: { path: 'github' },
              auth: { scheme: 'github', secret },
              templates: { message: 'event {{headers.x-github-event}}' },
            },
          ],
        },
      },
      { admin: { keepPayloads: true } },
    );
    const liveText: string[] = [];
    const stream = await s.adminFetch('/api/stream');
    const reader = (stream.body as ReadableStream<Uint8Array>)
      .pipeThrough(new TextDecoderStream())
      .getReader();
    const body = JSON.stringify({ zen: 'keep it logically awesome' });
    const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    const signed = await s.post('github', body, {
      token: null,
      headers: {
        'x-github-event': 'push',
        'x-github-delivery': 'delivery-1',
        'x-hub-signature-256': signature,
        'x-api-key': 'other-secret-value',
        cookie: 'session=cookie-secret',
      },
    });
    expect(signed.status).toBe(200);
    const tokened = await s.post(
      'wake',
      { text: 'hi' },
      { token: null, headers: { 'x-hookgate-token': TOKEN } },
    );
    expect(tokened.status).toBe(200);
    expect((await s.post('wake', { text: 'hello' })).status).toBe(200);
    while (liveText.join('').split('data: ').length < 4) {
      const { value } = await reader.read();
      liveText.push(value ?? '');
    }
    await reader.cancel();

    const answers = [liveText.join('')];
    const list = await json(await s.adminFetch('/api/requests'));
    answers.push(JSON.stringify(list));
    for (const { id } of list.requests) {
      answers.push(await (await s.adminFetch(`/api/requests/${id}`)).text());
      const replay = await s.adminFetch(`/api/requests/${id}/replay`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      answers.push(await replay.text());
    }
    const everything = answers.join('\n');
    for (const leaked of [
      TOKEN,
      ADMIN_TOKEN,
      secret,
      signature,
      signature.slice(7),
      'other-secret-value',
      'cookie-secret',
    ]) {
      expect(everything).not.toContain(leaked);
    }
    // What is kept: the body and the harmless headers; the delivery id.
    const githubId = list.requests.find((r: { hook: string }) => r.hook === 'github').id;
    const detail = await json(await s.adminFetch(`/api/requests/${githubId}`));
    expect(detail.request.payload.body).toBe(body);
    expect(detail.request.payload.headers['x-github-event']).toBe('push');
    expect(detail.request.verification).toMatchObject({
      scheme: 'github',
      deliveryId: 'delivery-1',
    });
    // Replay re-signs the kept body as GitHub would: accepted by the current config.
    const replay = await json(
      await s.adminFetch(`/api/requests/${githubId}/replay`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      }),
    );
    expect(replay.result).toMatchObject({ status: 200, mappingId: 'gh' });
  });

  // keepPayloads on, yet no body: the refusal came before the body was read. The answer says so
  // rather than blame the setting.
  it('replay of a request answered before its body was read says so (409 payload_not_kept)', async () => {
    const s = await stack({}, { admin: { keepPayloads: true } });
    const refused = await fetch(`${s.hooksUrl}/hooks/wake`, {
      method: 'POST',
      headers: { authorization: 'Bearer wrong-token', 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'never read' }),
    });
    expect(refused.status).toBe(401);
    const [record] = s.journal.list();
    expect(record?.status).toBe(401);
    const replay = await s.adminFetch(`/api/requests/${record?.id}/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(replay.status).toBe(409);
    const error = (await json(replay)).error;
    expect(error.code).toBe('payload_not_kept');
    expect(error.detail).toBe('it was answered before its body was read');
  });

  it('without keepPayloads no body is kept and replay is 409 payload_not_kept', async () => {
    const s = await stack();
    expect((await s.post('wake', { text: 'private words' })).status).toBe(200);
    const [record] = s.journal.list();
    const detail = await s.adminFetch(`/api/requests/${record?.id}`);
    const text = await detail.text();
    expect(text).not.toContain('"payload"');
    const replay = await s.adminFetch(`/api/requests/${record?.id}/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(replay.status).toBe(409);
    const error = (await json(replay)).error;
    expect(error.code).toBe('payload_not_kept');
    expect(error.detail).toBeUndefined();
  });
});

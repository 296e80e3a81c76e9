/**
 * End-to-end: idempotency keys (header or body field) over real HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import { rawPost } from './helpers/raw-http.ts';

describe('idempotency', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.stop());

  const count = async () => (await server.store.listActions({ limit: 100_000 })).length;
  const keyed = (hook: string, payload: unknown, key: string) =>
    server.post(hook, payload, { headers: { 'idempotency-key': key } });

  it('replays the first answer for a repeated header key and stores nothing new', async () => {
    const before = await count();
    const first = await keyed('agent', { message: 'build 17 failed' }, 'key-1');
    expect(first.status).toBe(200);
    const firstBody = await first.json();
    const again = await keyed('agent', { message: 'build 17 failed' }, 'key-1');
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(firstBody);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(await count()).toBe(before + 1);
  });

  it('treats key order in the payload as the same request', async () => {
    const a = await keyed('agent', { message: 'm', name: 'CI' }, 'key-order');
    const b = await keyed('agent', { name: 'CI', message: 'm' }, 'key-order');
    expect(b.status).toBe(200);
    expect(await b.json()).toEqual(await a.json());
  });

  it('answers 409 for the same key with a different payload or hook', async () => {
    expect((await keyed('wake', { text: 'one' }, 'key-2')).status).toBe(200);
    const before = await count();
    const changed = await keyed('wake', { text: 'two' }, 'key-2');
    expect(changed.status).toBe(409);
    expect(((await changed.json()) as { error: { code: string } }).error.code).toBe(
      'idempotency_conflict',
    );
    const otherHook = await keyed('agent', { message: 'one' }, 'key-2');
    expect(otherHook.status).toBe(409);
    expect(await count()).toBe(before);
  });

  it('compares the payload as parsed: spacing and escapes are the same request, a default spelt out is not', async () => {
    const send = (body: string) =>
      rawPost(`${server.url}/hooks/wake`, {
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          'idempotency-key': 'key-parsed',
        },
        chunks: [body],
      });
    const first = await send('{"text":"deploy é"}');
    expect(first.status).toBe(200);
    const before = await count();
    const spaced = await send('{ "text" :\n "deploy \\u00e9" }');
    expect(spaced.status).toBe(200);
    expect(spaced.headers['idempotent-replayed']).toBe('true');
    expect(JSON.parse(spaced.body)).toEqual(JSON.parse(first.body));
    // mode "now" is the default, but the request says something the first did not.
    const explicit = await send('{"text":"deploy é","mode":"now"}');
    expect(explicit.status).toBe(409);
    expect(JSON.parse(explicit.body).error.code).toBe('idempotency_conflict');
    expect(await count()).toBe(before);
  });

  it('a /wake retry with another query is still a replay: the built-in triggers read no query', async () => {
    const send = (query: string) =>
      fetch(`${server.url}/hooks/wake${query}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          'idempotency-key': 'key-wake-query',
        },
        body: '{"text":"disk full"}',
      });
    const first = await send('?attempt=1');
    const retry = await send('?attempt=2');
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await retry.json()).toEqual(await first.json());
  });

  it('accepts the key as an idempotencyKey body field', async () => {
    const first = await server.post('wake', { text: 'body key', idempotencyKey: 'key-3' });
    const again = await server.post('wake', { text: 'body key', idempotencyKey: 'key-3' });
    expect(await again.json()).toEqual(await first.json());
    const viaHeader = await keyed('wake', { text: 'body key' }, 'key-3');
    expect(viaHeader.status).toBe(200);
    expect(viaHeader.headers.get('idempotent-replayed')).toBe('true');
  });

  it('refuses a header key that disagrees with the body key', async () => {
    const res = await keyed('wake', { text: 'x', idempotencyKey: 'a' }, 'b');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_payload');
  });

  it('refuses a body key of only white space, as a blank header key is', async () => {
    const res = await server.post('wake', { text: 'x', idempotencyKey: '   ' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      'idempotencyKey: must be 1-256 characters, not only white space.',
    );
  });

  it('refuses an overlong header key before reading the body', async () => {
    const res = await keyed('wake', { text: 'x' }, 'k'.repeat(257));
    expect(res.status).toBe(400);
  });

  it('refuses an Idempotency-Key header sent twice (Node would join the copies into a key neither is)', async () => {
    const before = await count();
    const res = await rawPost(`${server.url}/hooks/wake`, {
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        'idempotency-key': ['a', 'b'],
      },
      chunks: [JSON.stringify({ text: 'two keys' })],
    });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).error).toMatchObject({ code: 'invalid_payload' });
    expect(JSON.parse(res.body).error.message).toContain('Idempotency-Key');
    expect(await count()).toBe(before);
    // The joined spelling, sent once, is an ordinary key of its own.
    expect((await keyed('wake', { text: 'two keys' }, 'a, b')).status).toBe(200);
  });

  it('does not record a key for a refused request, so it can be retried', async () => {
    const refused = await keyed('wake', { text: '' }, 'key-4');
    expect(refused.status).toBe(400);
    const fixed = await keyed('wake', { text: 'now valid' }, 'key-4');
    expect(fixed.status).toBe(200);
  });

  it('stores one action for concurrent requests sharing a key', async () => {
    const before = await count();
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => keyed('agent', { message: 'concurrent' }, 'key-5')),
    );
    const bodies = await Promise.all(responses.map((res) => res.json()));
    expect(responses.every((res) => res.status === 200)).toBe(true);
    expect(new Set(bodies.map((body) => JSON.stringify(body))).size).toBe(1);
    expect(await count()).toBe(before + 1);
  });

  it('forgets a key after the window', async () => {
    const short = await startTestServer({ hooks: { idempotencyWindowSeconds: 1 } });
    try {
      const send = () => short.post('wake', { text: 'x' }, { headers: { 'idempotency-key': 'k' } });
      const first = (await (await send()).json()) as { id: string };
      await new Promise((r) => setTimeout(r, 1100));
      const res = await send();
      expect(res.status).toBe(200);
      expect(res.headers.get('idempotent-replayed')).toBeNull();
      const later = (await res.json()) as { id: string };
      expect(later.id).toEqual(expect.any(String));
      expect(later.id).not.toBe(first.id);
      expect(await short.store.listActions({ limit: 10 })).toHaveLength(2);
    } finally {
      await short.stop();
    }
  });
});

describe('idempotency keys in mapped bodies', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        mappings: [
          { id: 'echo', match: { path: 'echo' }, templates: { message: '{{text}}' } },
          {
            id: 'deploy',
            match: { path: 'deploy' },
            action: 'wake',
            templates: { text: 'deploy {{payload.version}} to {{query.env}}' },
          },
        ],
      },
    });
  });
  afterAll(() => server.stop());

  const count = async () => (await server.store.listActions({ limit: 100_000 })).length;

  it.each([
    ['an overlong key (257 characters)', 'k'.repeat(257)],
    ['an empty key', ''],
    ['a key that is not a string', 42],
  ])('refuses %s from a mapped body like the header rule, storing nothing', async (_, key) => {
    const before = await count();
    const res = await server.post('echo', { text: 'hello', idempotencyKey: key });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_payload');
    expect(await count()).toBe(before);
  });

  it('the same key with another query on a mapped route is 409, not a replay that drops the second action', async () => {
    const send = (query: string, key: string) =>
      fetch(`${server.url}/hooks/deploy${query}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: '{"version":"1.2"}',
      });
    expect((await send('?env=staging', 'key-query')).status).toBe(200);
    const before = await count();
    for (const query of ['?env=production', '']) {
      const other = await send(query, 'key-query');
      expect(other.status).toBe(409);
      expect(((await other.json()) as { error: { code: string } }).error.code).toBe(
        'idempotency_conflict',
      );
    }
    // The same query again, its parameters in another order, is the retry it looks like.
    const first = await send('?env=canary&team=web', 'key-query-order');
    const retry = await send('?team=web&env=canary', 'key-query-order');
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await retry.json()).toEqual(await first.json());
    expect(await count()).toBe(before + 1);
  });

  it('replays a mapped request with a 256-character body key', async () => {
    const key = 'k'.repeat(256);
    const first = await server.post('echo', { text: 'hello', idempotencyKey: key });
    expect(first.status).toBe(200);
    const again = await server.post('echo', { text: 'hello', idempotencyKey: key });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual(await first.json());
  });
});

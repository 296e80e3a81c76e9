/**
 * Attack: a payload that takes a mapping's `idempotencyKey` template over the render bounds (a
 * long value read twice, a loop repeating a value of the parent, nested loops printing nothing).
 * The key is rendered by the replay check, before the mapping's fields, and its RenderLimitError
 * was no HookError there: 500 `internal`, logged as an error of ours, which a provider retries.
 * It also rendered within the default bounds, not the configured ones. Now it is the sender's
 * 400 `rendered_too_large` naming the mapping and `idempotencyKey`, within the configured
 * bounds, and nothing is stored.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';

type Body = { error?: { code: string; details?: Record<string, unknown> } };

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    hooks: {
      maxRenderedFieldBytes: 4096,
      maxRenderedActionBytes: 8192,
      maxRenderedRequestBytes: 16_384,
      mappings: [
        {
          id: 'orders',
          match: { path: 'orders' },
          action: 'wake',
          idempotencyKey: '{{payload.order}}-{{payload.attempt}}',
          templates: { text: 'order {{truncate payload.order 20}}' },
        },
        {
          id: 'batches',
          match: { path: 'batches' },
          action: 'wake',
          idempotencyKey: '{{#each payload.items}}{{../payload.batch}}{{/each}}',
          templates: { text: 'batch' },
        },
        {
          id: 'grid',
          match: { path: 'grid' },
          action: 'wake',
          idempotencyKey:
            '{{#each payload.xs}}{{#each ../payload.xs}}{{/each}}{{/each}}{{payload.id}}',
          templates: { text: 'grid' },
        },
      ],
    },
  });
});
afterAll(() => server.stop());

const stored = async () => (await server.store.listActions({ limit: 1000 })).length;

it.each([
  [
    'a long value read twice',
    'orders',
    { order: 'o'.repeat(3000), attempt: 'a'.repeat(3000) },
    'field',
  ],
  [
    'a loop repeating a value of the parent (each amplification)',
    'batches',
    { batch: 'b'.repeat(1000), items: Array.from({ length: 300 }, () => 0) },
    'field',
  ],
  [
    'nested loops printing nothing (quadratic loop)',
    'grid',
    { id: 'g', xs: Array.from({ length: 2000 }, () => 0) },
    'work',
  ],
])(
  'an idempotency key over the bound by %s is refused 400 naming the mapping',
  async (_name, hook, payload, limit) => {
    const before = await stored();
    const res = await server.post(hook, payload);
    const body = (await res.json()) as Body;
    expect(res.status).toBe(400);
    expect(body.error?.code).toBe('rendered_too_large');
    expect(body.error?.details).toMatchObject({ mappingId: hook, field: 'idempotencyKey', limit });
    expect(await stored()).toBe(before);
  },
);

it('an ordinary key is kept: the same order again is a replay', async () => {
  const first = await server.post('orders', { order: 'A-17', attempt: '1' });
  expect(first.status).toBe(200);
  const again = await server.post('orders', { order: 'A-17', attempt: '1' });
  expect(again.status).toBe(200);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(await again.json()).toEqual(await first.json());
});

it('two keys told apart only by lone surrogates are refused 400, never merged into one delivery (lone-surrogate id attack)', async () => {
  // A JSON escape makes a lone surrogate; stored or hashed, each became U+FFFD, so the second
  // order was answered as a replay of the first and dropped.
  const before = await stored();
  for (const order of ['"o-\\ud800"', '"o-\\udc00"']) {
    const res = await server.post('orders', `{"order":${order},"attempt":"1"}`);
    const body = (await res.json()) as Body;
    expect(res.status).toBe(400);
    expect(body.error?.code).toBe('invalid_payload');
    expect(res.headers.get('idempotent-replayed')).toBeNull();
  }
  expect(await stored()).toBe(before);
});

/**
 * The request journal's own bounds and what it never keeps: headers that
 * could carry a credential, oversized hook names, bodies past their bound,
 * the total of bodies and prompts, and the number of live subscribers.
 */
import { describe, expect, it } from 'vitest';
import type { Exchange } from '../engine/ingress/exchange.ts';
import { newExchange } from '../engine/ingress/exchange.ts';
import { isSafeHeader, keptHeaders } from '../engine/admin/journal-record.ts';
import { RequestJournal } from '../engine/admin/journal.ts';

/** An answered request as the handler publishes it, with a body and one action. */
function finished(overrides: Partial<Exchange> = {}, prompt = 'hello') {
  const exchange = newExchange(
    {
      method: 'POST',
      url: '/hooks/x',
      headers: { 'content-type': 'application/json', authorization: 'Bearer t' },
      rawHeaders: [],
      remoteAddress: '127.0.0.1',
      readBody: () => Promise.resolve(Buffer.alloc(0)),
    },
    () => [],
  );
  Object.assign(exchange, {
    hook: 'x',
    client: '127.0.0.1',
    raw: Buffer.from('{"a":1}'),
    accepted: {
      actions: [
        {
          kind: 'wake',
          id: `a-${exchange.id}`,
          hook: 'x',
          receivedAt: '',
          client: '',
          requestId: exchange.id,
          untrusted: true,
          text: prompt,
          mode: 'now',
        },
      ],
      response: null,
    },
    ...overrides,
  });
  return { exchange, status: 200, authenticated: true, durationMs: 1, replayed: false };
}

describe('journal: headers that are kept', () => {
  it.each([
    ['authorization', false],
    ['Proxy-Authorization', false],
    ['x-hookgate-token', false],
    ['cookie', false],
    ['x-hub-signature-256', false],
    ['stripe-signature', false],
    ['x-api-key', false],
    ['x-webhook-secret', false],
    ['x-gitlab-token', false],
    ['webhook-id', false],
    ['content-type', true],
    ['x-github-event', true],
    ['user-agent', true],
  ])('%s kept: %s', (name, kept) => {
    expect(isSafeHeader(name.toLowerCase(), new Set(['webhook-id']))).toBe(kept);
  });

  it('drops a header of an ordinary name whose value is a credential (Bearer ..., Basic ...)', () => {
    const kept = keptHeaders(
      {
        'x-upstream': 'Bearer the-hook-token-0123456789',
        'x-forwarded-authorisation': 'basic dXNlcjpwYXNz',
        'x-note': 'good news for the bearer',
        'user-agent': 'GitHub-Hookshot/1',
      },
      new Set(),
    );
    expect(kept).toEqual({
      'x-note': 'good news for the bearer',
      'user-agent': 'GitHub-Hookshot/1',
    });
  });

  it('keeps at most 64 headers, each value bounded', () => {
    const many = Object.fromEntries(
      Array.from({ length: 200 }, (_, i) => [`x-h${i}`, 'v'.repeat(10_000)]),
    );
    const kept = keptHeaders(many, new Set());
    expect(Object.keys(kept)).toHaveLength(64);
    expect(kept['x-h0']?.length).toBeLessThanOrEqual(4097);
  });
});

describe('journal: bounds', () => {
  it('keeps no body and no headers unless keepPayloads is on', () => {
    const journal = new RequestJournal({
      recentRequests: 10,
      keepPayloads: false,
      maxBodyBytes: () => 100,
    });
    const record = journal.add(finished());
    expect(record.payload).toBeUndefined();
    expect(JSON.stringify(record)).not.toContain('Bearer');
  });

  it('a hostile hook name is bounded data', () => {
    const journal = new RequestJournal({
      recentRequests: 10,
      keepPayloads: false,
      maxBodyBytes: () => 100,
    });
    const record = journal.add(finished({ hook: '<script>'.repeat(10_000) }));
    expect(record.hook.length).toBeLessThanOrEqual(257);
  });

  it('a body past maxBodyBytes is cut and marked', () => {
    const journal = new RequestJournal({
      recentRequests: 10,
      keepPayloads: true,
      maxBodyBytes: () => 4,
    });
    const record = journal.add(finished());
    expect(record.payload?.body.toString()).toBe('{"a"');
    expect(record.payload?.truncated).toBe(true);
    expect(record.payload?.headers).toEqual({ 'content-type': 'application/json' });
  });

  it('past the total, the oldest records give up their bodies and prompts first', () => {
    const journal = new RequestJournal({
      recentRequests: 100,
      keepPayloads: true,
      maxBodyBytes: () => 1000,
      maxTotalBytes: 5_000,
    });
    const ids = Array.from({ length: 20 }, () => journal.add(finished({}, 'p'.repeat(200))).id);
    const records = ids.map((id) => journal.get(id));
    expect(records.every((r) => r !== undefined)).toBe(true);
    const newest = records.at(-1);
    const oldest = records[0];
    expect(newest?.payload).toBeDefined();
    expect(newest?.actions[0]?.prompt).toHaveLength(200);
    expect(oldest?.payload).toBeUndefined();
    expect(oldest?.actions[0]).toMatchObject({ prompt: '', truncated: true });
  });

  it('caps the live subscribers', () => {
    const journal = new RequestJournal({
      recentRequests: 10,
      keepPayloads: false,
      maxBodyBytes: () => 100,
      maxSubscribers: 2,
    });
    const first = journal.subscribe(() => undefined);
    expect(journal.subscribe(() => undefined)).toBeDefined();
    expect(journal.subscribe(() => undefined)).toBeUndefined();
    first?.();
    expect(journal.subscribe(() => undefined)).toBeDefined();
  });
});

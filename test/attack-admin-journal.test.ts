/**
 * Growing the console's memory: with keepPayloads on, a signed route's body
 * is read before its signature is checked, so anyone can have a body, its
 * headers and its query remembered. The journal's total bound must hold
 * whatever part of the request the bytes are in: an empty body under 16 KB
 * of headers weighs as much as a 16 KB body.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RequestJournal } from '../engine/admin/journal.ts';
import type { JournalRecord } from '../engine/admin/journal-record.ts';
import { newExchange } from '../engine/ingress/exchange.ts';
import { type AdminStack, startAdminStack } from './helpers/admin.ts';

const stacks: AdminStack[] = [];
afterEach(async () => {
  await Promise.all(stacks.splice(0).map((stack) => stack.stop()));
});

/** Headers just under Node's 16 KB header bound, none of them a credential. */
function bulkyHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = 0; i < 60; i++) headers[`x-filler-${i}`] = 'h'.repeat(240);
  return headers;
}

/** A refused request to a signed route as the handler publishes it: empty body, bulky head. */
function refusedBulky() {
  const headers = bulkyHeaders();
  const exchange = newExchange(
    {
      method: 'POST',
      url: `/hooks/github?${'q'.repeat(1000)}`,
      headers,
      rawHeaders: [],
      remoteAddress: '127.0.0.1',
      readBody: () => Promise.resolve(Buffer.alloc(0)),
    },
    () => [],
  );
  Object.assign(exchange, {
    hook: 'github',
    client: '127.0.0.1',
    query: 'q'.repeat(1000),
    raw: Buffer.alloc(0),
  });
  return {
    exchange,
    status: 401,
    code: 'signature_mismatch',
    authenticated: false,
    durationMs: 1,
    replayed: false,
  };
}

/** Characters a record keeps of its request: body, header names and values, query. */
function keptChars(record: JournalRecord | undefined): number {
  const payload = record?.payload;
  if (!payload) return 0;
  let chars = payload.body.length + payload.query.length;
  for (const [name, value] of Object.entries(payload.headers)) chars += name.length + value.length;
  return chars;
}

describe('attack: headers and queries past the journal total', () => {
  it('an unsigned request to a signed route is remembered, headers and all', async () => {
    const s = await startAdminStack(
      {
        hooks: {
          mappings: [
            {
              id: 'gh',
              match: { path: 'github' },
              auth: { scheme: 'github', secret: 'gh-secret-attack-journal' },
              templates: { message: 'x' },
            },
          ],
        },
      },
      { admin: { keepPayloads: true } },
    );
    stacks.push(s);
    const res = await s.post('github?page=1', '{}', {
      token: null,
      headers: { ...bulkyHeaders(), 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` },
    });
    expect(res.status).toBe(401);
    const [record] = s.journal.list();
    expect(record?.payload?.headers['x-filler-0']).toHaveLength(240);
    expect(keptChars(record)).toBeGreaterThan(14_000);
  });

  it('records of empty bodies and bulky headers give theirs up past maxTotalBytes', () => {
    const maxTotalBytes = 256 * 1024;
    const journal = new RequestJournal({
      recentRequests: 1000,
      keepPayloads: true,
      maxBodyBytes: () => 65_536,
      maxTotalBytes,
    });
    for (let i = 0; i < 1000; i++) journal.add(refusedBulky() as never);
    const records = journal.list();
    expect(records).toHaveLength(1000);
    const kept = records.reduce((sum, record) => sum + keptChars(record), 0);
    // 1000 × ~16 KB were sent; at most the total (and one record over it) is kept.
    expect(kept).toBeLessThanOrEqual(maxTotalBytes + keptChars(records[0]));
    // The newest keep theirs, the oldest gave theirs up.
    expect(records[0]?.payload).toBeDefined();
    expect(records.at(-1)?.payload).toBeUndefined();
  });
});

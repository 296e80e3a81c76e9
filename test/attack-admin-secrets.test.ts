/**
 * Credentials reaching the console through the query string: a sender that
 * can only be given a URL puts its key there (`?api_key=` of a proxy in
 * front, a `?signature=`). Headers named like credentials are
 * dropped before anything is remembered; query parameters so named must be
 * too, in the list, the detail, the live stream and a replay.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { keptQuery } from '../engine/admin/journal-record.ts';
import { type AdminStack, startAdminStack } from './helpers/admin.ts';

const stacks: AdminStack[] = [];
afterEach(async () => {
  await Promise.all(stacks.splice(0).map((stack) => stack.stop()));
});

const SECRETS = ['KEY-VALUE-1111', 'SIG-VALUE-2222', 'AUTH-VALUE-3333', 'PASS-VALUE-4444'];

describe('attack: credentials in the query string of a kept request', () => {
  it.each([
    ['api_key=KEY-VALUE-1111&page=2', 'page=2'],
    ['page=2&Signature=SIG-VALUE-2222', 'page=2'],
    ['x-auth=AUTH-VALUE-3333&a=1&b=2', 'a=1&b=2'],
    ['api%5Fkey=KEY-VALUE-1111&page=2', 'page=2'],
    ['api%255Fkey=KEY-VALUE-1111', ''],
    ['a=1;password=PASS-VALUE-4444&b=2', 'b=2'],
    ['Client.Secret=x&keep=yes', 'keep=yes'],
    ['page=2&size=10', 'page=2&size=10'],
    ['', ''],
  ])('keptQuery(%j) is %j', (query, kept) => {
    expect(keptQuery(query)).toBe(kept);
  });

  it('an unsigned request to a signed route: no query credential in any answer', async () => {
    const s = await startAdminStack(
      {
        hooks: {
          mappings: [
            {
              id: 'gh',
              match: { path: 'github' },
              auth: { scheme: 'github', secret: 'gh-secret-attack-query' },
              templates: { message: 'x' },
            },
          ],
        },
      },
      { admin: { keepPayloads: true } },
    );
    stacks.push(s);
    const stream = await s.adminFetch('/api/stream');
    const reader = (stream.body as ReadableStream<Uint8Array>)
      .pipeThrough(new TextDecoderStream())
      .getReader();
    const query = `api_key=${SECRETS[0]}&page=2&signature=${SECRETS[1]}&X-Auth=${SECRETS[2]}`;
    const res = await s.post(`github?${query}`, '{"zen":"x"}', {
      token: null,
      headers: { 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` },
    });
    expect(res.status).toBe(401);
    let live = '';
    while (!live.includes('data: ')) live += (await reader.read()).value ?? '';
    await reader.cancel();
    const list = await (await s.adminFetch('/api/requests')).text();
    const [summary] = (JSON.parse(list) as { requests: Array<{ id: string }> }).requests;
    const detail = await (await s.adminFetch(`/api/requests/${summary?.id}`)).text();
    expect(
      (JSON.parse(detail) as { request: { payload: { query: string } } }).request.payload.query,
    ).toBe('page=2');
    const replay = await (
      await s.adminFetch(`/api/requests/${summary?.id}/replay`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      })
    ).text();
    for (const text of [live, list, detail, replay])
      for (const secret of SECRETS) expect(text).not.toContain(secret);
  });
});

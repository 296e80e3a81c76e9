/**
 * The request list's query string over real HTTP: a limit, status or run
 * state that is not one the list can use is refused with 400 invalid_query
 * naming the parameter, as `hookgate runs --limit/--state` refuse theirs,
 * rather than answered with the default (`limit=0`, `limit=abc`), nothing
 * (`limit=-5`, `state=bogus`) or one row more (`limit=1.5`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readListQuery } from '../engine/admin/views.ts';
import { type AdminStack, startAdminStack } from './helpers/admin.ts';

const stacks: AdminStack[] = [];
afterEach(async () => {
  await Promise.all(stacks.splice(0).map((stack) => stack.stop()));
});

async function withRequests(count: number): Promise<AdminStack> {
  const s = await startAdminStack();
  stacks.push(s);
  for (let i = 0; i < count; i += 1)
    expect((await s.post('wake', { text: `w${i}` })).status).toBe(200);
  return s;
}

describe('admin listener: the request list query', () => {
  it.each([
    ['limit=0', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=-5', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=1e3', 'limit'],
    ['limit=', 'limit'],
    ['limit=%201', 'limit'],
    ['limit=2&limit=3', 'limit'],
    ['status=abc', 'status'],
    ['status=40', 'status'],
    ['status=6xx', 'status'],
    ['state=bogus', 'state'],
    ['state=DONE', 'state'],
    ['route=a&route=b', 'route'],
  ])('refuses ?%s with 400 invalid_query naming %s', async (query, name) => {
    const s = await withRequests(3);
    const res = await s.adminFetch(`/api/requests?${query}`);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { ok: boolean; error: { code: string; detail: string } };
    expect(body.ok).toBe(false);
    expect(body.error.code).toBe('invalid_query');
    expect(body.error.detail.startsWith(`${name} `)).toBe(true);
  });

  it.each([
    ['limit=2', 2],
    ['limit=1000', 3],
    ['limit=99999999999999999999', 3],
    ['status=2xx', 3],
    ['status=200&limit=1', 1],
    ['state=', 3],
    ['unknown=1&limit=1', 1],
  ])('answers ?%s with %i requests', async (query, count) => {
    const s = await withRequests(3);
    const res = await s.adminFetch(`/api/requests?${query}`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { requests: unknown[] }).requests).toHaveLength(count);
  });

  it('caps a limit over 1000 at 1000 and reads the filters as given (pure)', () => {
    expect(readListQuery(new URLSearchParams('limit=5000&status=4XX&q= abc '))).toEqual({
      limit: 1000,
      filter: { status: '4XX', q: 'abc' },
    });
    expect(readListQuery(new URLSearchParams(''))).toEqual({ limit: 1000, filter: {} });
  });
});

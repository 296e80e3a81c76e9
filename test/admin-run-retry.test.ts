/**
 * Retrying a run from the admin API, with the runtime on: a run that does not exist is
 * 404 not_found (there is nothing to conflict with), a run that is not dead or failed is
 * 409 not_retryable, each with its detail.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type AdminStack, startAdminStack } from './helpers/admin.ts';
import { waitFor } from './helpers/runtime.ts';

const stacks: AdminStack[] = [];
afterEach(async () => {
  await Promise.all(stacks.splice(0).map((stack) => stack.stop()));
});

async function retry(s: AdminStack, id: string) {
  const res = await s.adminFetch(`/api/runs/${id}/retry`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  const body = (await res.json()) as { error?: { code: string; detail?: string } };
  return { status: res.status, code: body.error?.code, detail: body.error?.detail };
}

describe('admin API: retry of a run', () => {
  it('an unknown run id is 404 not_found, not a conflict', async () => {
    const s = await startAdminStack({}, { runtime: true });
    stacks.push(s);
    expect(await retry(s, 'no-such-run')).toEqual({
      status: 404,
      code: 'not_found',
      detail: 'no such run',
    });
  });

  it('a run that is done is 409 not_retryable', async () => {
    const s = await startAdminStack({}, { runtime: true });
    stacks.push(s);
    const accepted = (await (await s.post('wake', { text: 'done soon' })).json()) as { id: string };
    await waitFor('the wake run done', async () => {
      const { request } = (await (
        await s.adminFetch(`/api/requests/${s.journal.list()[0]?.id}`)
      ).json()) as { request: { runs: Record<string, { state: string } | null> } };
      return request.runs[accepted.id]?.state === 'done';
    });
    expect(await retry(s, accepted.id)).toEqual({
      status: 409,
      code: 'not_retryable',
      detail: 'the run is done, not dead or failed',
    });
  });
});

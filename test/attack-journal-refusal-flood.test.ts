/**
 * Attack: erasing the operator's view of real traffic without getting in. The console's
 * journal remembers the last `recentRequests` answered requests; a sender who cannot
 * authenticate could send that many refusals (wrong tokens, bad signatures, unknown paths,
 * methods, oversized bodies before the signature is checked, 429s once locked out, a captured
 * signed delivery sent again) and push
 * every real request out of it within a second. Requests answered before their caller was
 * authenticated are held apart: a flood of them evicts only others of their kind, and takes
 * none of the bytes kept for authenticated requests' bodies. The list, the search by id, the
 * filters and the live feed show both, merged newest first.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RequestJournal } from '../engine/admin/journal.ts';
import type { RequestFinished } from '../engine/observe/events.ts';
import { type AdminStack, startAdminStack } from './helpers/admin.ts';
import { TOKEN } from './helpers/hookgate.ts';
import { waitFor } from './helpers/runtime.ts';
import { answeredExchange, refused } from './helpers/journal-records.ts';

const SECRET = 'gh-secret-refusal-flood-attack';
const RECENT = 10;

type Summary = { id: string; status: number; code?: string; authenticated?: boolean };

describe('attack: a flood of refusals before authentication erases the journal', () => {
  let stack: AdminStack;
  // The authenticated requests, oldest first, and every refusal of the flood, oldest first.
  const real: string[] = [];
  const refused: string[] = [];
  let streamed: string[] = [];
  let stopStream: () => void = () => undefined;

  async function list(query = ''): Promise<Summary[]> {
    const res = await stack.adminFetch(`/api/requests${query}`);
    expect(res.status).toBe(200);
    return ((await res.json()) as { requests: Summary[] }).requests;
  }

  /** The journal's newest record after a request was answered (it is added as it is answered). */
  function newest(): string {
    return stack.journal.list()[0]?.id as string;
  }

  beforeAll(async () => {
    stack = await startAdminStack(
      {
        hooks: {
          maxBodyBytes: 4096,
          mappings: [
            {
              id: 'gh',
              match: { path: 'github' },
              auth: { scheme: 'github', secret: SECRET },
              templates: { message: 'push {{payload.n}}' },
            },
          ],
        },
      },
      { admin: { recentRequests: RECENT } },
    );
    // The live feed, read from before the first request.
    const res = await stack.adminFetch('/api/stream');
    const reader = (res.body as ReadableStream<Uint8Array>)
      .pipeThrough(new TextDecoderStream())
      .getReader();
    let text = '';
    let open = true;
    stopStream = () => {
      open = false;
      void reader.cancel();
    };
    void (async () => {
      while (open) {
        const { value, done } = await reader.read().catch(() => ({ value: '', done: true }));
        if (done) return;
        text += value;
        streamed = [...text.matchAll(/^data: (.*)$/gm)].map(
          (m) => (JSON.parse(m[1] as string) as Summary).id,
        );
      }
    })();

    // Real traffic: a token-authenticated wake, a signed delivery, and a caller's own mistake
    // after authentication (400 invalid_json: the authenticated caller's, not an attacker's).
    expect((await stack.post('wake', { text: 'real one' })).status).toBe(200);
    real.push(newest());
    const body = JSON.stringify({ n: 1 });
    const signature = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
    const signed = await stack.post('github', body, {
      token: null,
      headers: {
        'x-hub-signature-256': signature,
        'x-github-event': 'push',
        'x-github-delivery': 'delivery-real-1',
      },
    });
    expect(signed.status).toBe(200);
    real.push(newest());
    expect((await stack.post('wake', 'not json')).status).toBe(400);
    real.push(newest());
    // The hook token in the query too, from a caller who presents it in its header: refused
    // before the authenticate stage, but by a caller the token authenticated.
    const inQuery = await stack.post(`wake?key=${TOKEN}`, { text: 'x' });
    expect(inQuery.status).toBe(400);
    expect(((await inQuery.json()) as { error: { code: string } }).error.code).toBe(
      'token_in_query',
    );
    real.push(newest());

    // The flood: every kind of answer given before the caller is known, three times the ring.
    const hooks = `${stack.hooksUrl}${stack.hooksPath}`;
    const kinds: Array<() => Promise<Response>> = [
      () => stack.post('wake', { text: 'guess' }, { token: 'wrong-token-guess' }),
      // A token parameter by its name: refused whoever sends it (400 token_in_query).
      () => stack.post('wake?token=guess', { text: 'guess' }, { token: null }),
      () => fetch(`${stack.hooksUrl}/elsewhere`, { method: 'POST', body: '{}' }),
      () => fetch(`${hooks}/wake`, { method: 'PUT', body: '{}' }),
      () =>
        stack.post('github', body, {
          token: null,
          headers: { 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` },
        }),
      // Past maxBodyBytes, read before its signature is checked.
      () =>
        stack.post('github', 'x'.repeat(8192), {
          token: null,
          headers: { 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` },
        }),
      // A captured delivery sent again: its signature verifies (GitHub's carries no time), so
      // anyone who saw it can, and it is answered as a replay.
      () =>
        stack.post('github', body, {
          token: null,
          headers: {
            'x-hub-signature-256': signature,
            'x-github-event': 'push',
            'x-github-delivery': 'delivery-real-1',
          },
        }),
    ];
    for (let i = 0; i < RECENT * 3; i++) {
      const res = await (kinds[i % kinds.length] as () => Promise<Response>)();
      if (res.status === 200) expect(res.headers.get('idempotent-replayed')).toBe('true');
      else expect(res.status).toBeGreaterThanOrEqual(400);
      refused.push(newest());
    }
    await waitFor('the live feed to bring every request', () =>
      streamed.length >= real.length + refused.length ? true : undefined,
    );
  }, 120_000);

  afterAll(async () => {
    stopStream();
    await stack?.stop();
  });

  it('every authenticated request is still listed, after the newest refusals, newest first', async () => {
    const newestRefusals = refused.slice(-RECENT).reverse();
    expect((await list()).map((r) => r.id)).toEqual([...newestRefusals, ...[...real].reverse()]);
  });

  it('refusals evict only refusals: the oldest are gone, the ring holds recentRequests of them', async () => {
    for (const id of refused.slice(0, -RECENT)) expect(stack.journal.get(id)).toBeUndefined();
    expect((await list('?authenticated=false')).map((r) => r.id)).toEqual(
      refused.slice(-RECENT).reverse(),
    );
  });

  it('each authenticated request is found by its id, by q and by the filters', async () => {
    for (const id of real) {
      expect((await stack.adminFetch(`/api/requests/${id}`)).status).toBe(200);
      expect((await list(`?q=${id}`)).map((r) => r.id)).toEqual([id]);
    }
    expect((await list('?authenticated=true')).map((r) => r.id)).toEqual([...real].reverse());
    expect((await list('?status=400')).map((r) => r.id)).toContain(real[2]);
    // The delivery, and after it the copies sent again, held with the refusals.
    const byDelivery = (await list('?q=delivery-real-1')).map((r) => r.id);
    expect(byDelivery.at(-1)).toBe(real[1]);
    expect(byDelivery.slice(0, -1).every((id) => refused.includes(id))).toBe(true);
  });

  it('a limit takes the newest of both, merged', async () => {
    expect((await list('?limit=3')).map((r) => r.id)).toEqual(refused.slice(-3).reverse());
    const all = await list('?limit=1000');
    expect(all).toHaveLength(RECENT + real.length);
    expect(all.filter((r) => r.authenticated).map((r) => r.id)).toEqual([...real].reverse());
  });

  it('an authenticated filter other than true or false is refused', async () => {
    const res = await stack.adminFetch('/api/requests?authenticated=maybe');
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ ok: false, error: { code: 'invalid_query' } });
  });

  it('the live feed brought both kinds, in the order they were answered', () => {
    expect(streamed).toEqual([...real, ...refused]);
  });
});

/** An answered request as the handler publishes it: a kept body and headers of `bytes`. */
function finished(authenticated: boolean, bytes: number): RequestFinished {
  const exchange = answeredExchange(
    '/hooks/github',
    { hook: 'github', raw: Buffer.alloc(bytes, 'b') },
    { 'x-filler': 'h'.repeat(bytes) },
  );
  return authenticated
    ? { exchange, status: 200, authenticated, durationMs: 1, replayed: false }
    : refused(exchange);
}

describe('attack: a flood of bulky refusals takes the bytes kept for real bodies', () => {
  it('an authenticated request keeps its body while refusals give theirs up among themselves', () => {
    const maxTotalBytes = 256 * 1024;
    const journal = new RequestJournal({
      recentRequests: 1000,
      keepPayloads: true,
      maxBodyBytes: () => 65_536,
      maxTotalBytes,
    });
    const kept = journal.add(finished(true, 8000));
    for (let i = 0; i < 1000; i++) journal.add(finished(false, 8000));
    expect(journal.get(kept.id)?.payload?.body).toHaveLength(8000);
    const refusals = journal.list().filter((r) => r.id !== kept.id);
    const refusedBytes = refusals.reduce(
      (sum, r) => sum + (r.payload ? r.payload.body.length + 8000 + 'x-filler'.length : 0),
      0,
    );
    // Refusals hold at most their share of the total, the newest keeping theirs.
    expect(refusedBytes).toBeLessThanOrEqual(maxTotalBytes / 4 + 16_100);
    expect(refusals[0]?.payload).toBeDefined();
    expect(refusals.at(-1)?.payload).toBeUndefined();
  });
});

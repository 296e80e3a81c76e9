/**
 * Another site's page sending blind (no-cors) requests to an admin listener
 * that has no token (loopback only): such a GET cannot read its answer, but
 * it ran (readiness probes the store, a filtered list reads it). A browser
 * names the request's site in Sec-Fetch-Site; every route beyond the page
 * and its files refuses `cross-site` and `same-site` (another port of
 * localhost) with 403, and runs nothing. Same-origin requests (the
 * console's own), the address bar (`none`) and tools (no header) go on.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGuard } from '../engine/admin/guard.ts';
import { type AdminStack, startAdminStack } from './helpers/admin.ts';

describe('blind cross-site requests to an admin listener without a token', () => {
  let stack: AdminStack;
  let probes = 0;
  beforeAll(async () => {
    stack = await startAdminStack(
      {},
      {
        admin: { token: null },
        readiness: async () => {
          probes++;
          return { ready: true, checks: { store: { ok: true } } };
        },
      },
    );
  });
  afterAll(() => stack?.stop());

  const get = (path: string, site?: string) =>
    stack.adminFetch(path, {
      token: null,
      ...(site !== undefined && { headers: { 'sec-fetch-site': site } }),
    });

  it.each(['/readyz', '/healthz', '/api/requests?state=dead', '/api/info', '/metrics'])(
    '%s from another site is refused 403 and runs nothing',
    async (path) => {
      for (const site of ['cross-site', 'same-site', 'Cross-Site']) {
        const before = probes;
        const res = await get(path, site);
        expect(res.status).toBe(403);
        expect(await res.json()).toMatchObject({ error: { code: 'forbidden_origin' } });
        expect(probes).toBe(before);
      }
    },
  );

  it('the console itself, its address bar and tools are served as before', async () => {
    expect((await get('/readyz', 'same-origin')).status).toBe(200);
    expect((await get('/readyz', 'none')).status).toBe(200);
    expect((await get('/readyz')).status).toBe(200);
    // The page and its files stay open, followed from a link on another site too.
    expect((await get('/', 'cross-site')).status).toBe(200);
    expect((await get('/console.js', 'cross-site')).status).toBe(200);
  });
});

describe('the admin guard and Sec-Fetch-Site', () => {
  const sites = fc.constantFrom('cross-site', 'same-site', 'same-origin', 'none', 'CROSS-SITE');
  const request = fc.record({
    method: fc.constantFrom('GET', 'HEAD', 'POST'),
    host: fc.constantFrom('127.0.0.1:8788', 'localhost:8788', '[::1]:8788'),
    origin: fc.constant(undefined),
    authorization: fc.constantFrom(undefined, 'Bearer admin-token-0123456789'),
    fetchSite: fc.option(sites, { nil: undefined }),
    needsToken: fc.boolean(),
  });

  it('refuses another site exactly on the routes that need the token, token or not', () => {
    for (const guard of [createGuard(undefined), createGuard('admin-token-0123456789')]) {
      fc.assert(
        fc.property(request, (r) => {
          const otherSite = ['cross-site', 'same-site'].includes(r.fetchSite?.toLowerCase() ?? '');
          const refused = guard(r);
          if (r.needsToken && otherSite) expect(refused).toBe('forbidden_origin');
          else expect(refused).not.toBe('forbidden_origin');
        }),
      );
    }
  });
});

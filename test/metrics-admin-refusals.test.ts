/**
 * Guesses at the admin token were invisible: the admin listener answered 401 and counted
 * nothing, so an operator could not see someone trying tokens (it locks nobody out, which
 * would let whoever reaches the port keep the operator out). Its refusals before a request
 * runs are counted by code, and what was presented never becomes a label.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../engine/observe/metrics.ts';
import { type AdminStack, startAdminStack } from './helpers/admin.ts';
import { value } from './helpers/metrics-text.ts';

const GUESS = 'guessed-admin-token-0123456789';
let stack: AdminStack;
let metrics: Metrics;
beforeAll(async () => {
  metrics = createMetrics();
  stack = await startAdminStack({}, { metrics });
});
afterAll(async () => {
  await stack.stop();
  metrics.close();
});

it('wrong admin tokens and cross-site requests are counted by code, the guess never shown', async () => {
  for (let i = 0; i < 3; i++) {
    const res = await stack.adminFetch('/api/requests', { token: GUESS });
    expect(res.status).toBe(401);
  }
  expect((await stack.adminFetch('/metrics', { token: null })).status).toBe(401);
  const crossSite = await stack.adminFetch('/api/info', {
    headers: { 'sec-fetch-site': 'cross-site' },
  });
  expect(crossSite.status).toBe(403);
  // The console's own files need no token and are no refusal.
  expect((await stack.adminFetch('/', { token: null })).status).toBe(200);

  const scrape = await stack.adminFetch('/metrics');
  expect(scrape.status).toBe(200);
  const text = await scrape.text();
  expect(value(text, 'hookgate_admin_refusals_total', { code: 'unauthorized' })).toBe(4);
  expect(value(text, 'hookgate_admin_refusals_total', { code: 'forbidden_origin' })).toBe(1);
  expect(text).not.toContain(GUESS);
});

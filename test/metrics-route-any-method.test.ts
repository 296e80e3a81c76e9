/**
 * `HEAD /hooks/wake` was counted as route="(unknown)" while `GET /hooks/wake` was counted as
 * route="wake": the method check for anything but POST and GET ran in the admit stage, before
 * the route was named, so the route label was missing for it. A request to a served route now
 * carries that route's name whatever its method and whichever stage answers it; a name nothing
 * serves stays "(unknown)", so the labels stay the configured set.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../engine/observe/metrics.ts';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import { value } from './helpers/metrics-text.ts';

let server: TestServer;
let metrics: Metrics;
beforeAll(async () => {
  server = await startTestServer({
    hooks: {
      mappings: [{ id: 'ci', match: { path: 'ingest' }, action: 'wake', textTemplate: 'CI' }],
    },
  });
  metrics = createMetrics();
});
afterAll(async () => {
  metrics.close();
  await server.stop();
});

const send = (method: string, hook: string) =>
  fetch(`${server.url}/hooks/${hook}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}` },
  });

/** The count of 405s under `route`, once it reaches `count` (the request is counted as it ends). */
async function counted(route: string, count: number): Promise<number> {
  const deadline = Date.now() + 5_000;
  let seen = 0;
  while (Date.now() < deadline) {
    const text = await metrics.render();
    seen = value(text, 'hookgate_requests_total', { route, status: '405' });
    if (seen >= count) return seen;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return seen;
}

it.each([
  ['wake', 'wake'],
  ['agent', 'agent'],
  ['ingest', 'ingest'],
  ['made-up-name', '(unknown)'],
])('every method on /hooks/%s is counted under route="%s"', async (hook, route) => {
  const methods = ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH'];
  for (const method of methods) {
    const answer = await send(method, hook);
    await answer.arrayBuffer();
    // Every route, and the catch-all for names nothing serves, takes POST alone.
    expect(answer.status, method).toBe(405);
  }
  expect(await counted(route, methods.length)).toBe(methods.length);
});

it('a made-up name refused for its method is counted as (unknown), never by its name', async () => {
  const answer = await send('HEAD', 'made-up-head');
  await answer.arrayBuffer();
  const text = await metrics.render();
  expect(text).not.toContain('made-up-head');
  expect(text).not.toContain('made-up-name');
});

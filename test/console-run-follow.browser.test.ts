/**
 * A request's detail left open while its run changes: after Retry on a dead run, the pane
 * follows the run to its end (done, with the agent's reply) without a click. It showed the run
 * once more, queued or running, and then never again.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { chrome, launchChromium } from './helpers/console-browser.ts';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitForFinal } from './helpers/runtime.ts';

describe.skipIf('missing' in chrome)('a retried run in an open detail', () => {
  let browser: Browser;
  let stack: AdminStack;
  let runner: Server;
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });

  beforeAll(async () => {
    // First attempt fails (dead after one attempt); the retried one answers only once the test
    // has seen the pane show the run again (so the run is surely not done by then).
    let calls = 0;
    runner = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        calls += 1;
        if (calls === 1) {
          res.writeHead(503).end('busy');
          return;
        }
        held.then(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ reply: 'Retried and done.' }));
        });
      });
    });
    await new Promise<void>((resolve) => runner.listen(0, '127.0.0.1', resolve));
    const runnerUrl = `http://127.0.0.1:${(runner.address() as AddressInfo).port}`;
    stack = await startAdminStack(
      {
        agents: {
          list: [{ id: 'main', default: true, runner: { kind: 'http', url: `${runnerUrl}/run` } }],
        },
        runtime: {
          retry: { maxAttempts: 1, baseDelayMs: 10, maxDelayMs: 10 },
          heartbeat: { every: 'off' },
        },
      },
      { runtime: true },
    );
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    release();
    await browser?.close();
    await stack?.stop();
    runner?.closeAllConnections();
    await new Promise((resolve) => runner?.close(resolve));
  });

  it('shows the run done once it is done, without a click', async () => {
    const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    await page.goto(`${stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
    await page.locator('#live.on').waitFor();
    expect((await stack.post('agent', { message: 'do it' })).status).toBe(200);
    const record = stack.journal.list()[0];
    const actionId = record?.actions[0]?.id as string;
    await waitForFinal(stack.dataDir, actionId);
    await page.locator(`#request-rows tr[data-id="${record?.id}"]`).click();
    await expect.poll(() => page.locator('#detail .state').first().textContent()).toBe('dead');
    await page.click('#detail button.retry');
    await page.locator('#detail .note', { hasText: 'queued again' }).waitFor();
    // The pane shows the run again (no longer dead).
    await expect
      .poll(() => page.locator('#detail .state').first().textContent())
      .toMatch(/queued|running/);
    release();
    await waitForFinal(stack.dataDir, actionId, 20_000, ['done']);
    const done = await page
      .locator('#detail .state.done')
      .waitFor({ timeout: 10_000 })
      .then(() => true)
      .catch(() => false);
    expect(done, 'the open detail shows the run done').toBe(true);
  }, 90_000);
});

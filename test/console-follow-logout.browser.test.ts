/**
 * A tab that logs out while its open detail follows an unfinished run stops reading it (it kept
 * asking the server, without a token, every few seconds, for ever).
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { chrome, launchChromium } from './helpers/console-browser.ts';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

describe.skipIf('missing' in chrome)('following a run after logging out', () => {
  let browser: Browser;
  let stack: AdminStack;
  let runner: Server;
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });

  beforeAll(async () => {
    runner = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        held.then(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ reply: 'Done.' }));
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
        runtime: { heartbeat: { every: 'off' } },
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

  it('a logged-out tab stops reading the followed request', async () => {
    const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    await page.goto(`${stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
    await page.locator('#live.on').waitFor();
    expect((await stack.post('agent', { message: 'take your time' })).status).toBe(200);
    const id = stack.journal.list()[0]?.id as string;
    await page.locator(`#request-rows tr[data-id="${id}"]`).click();
    await expect
      .poll(() => page.locator('#detail .state').first().textContent())
      .toMatch(/queued|running/);

    await page.locator('#logout').click();
    await page.locator('#login').waitFor();
    // Refused reads of the followed request after the logout (each one 401, no token sent), up
    // to the first two (the pending read at 1 s, a retry 2 s after it). A stopped follow makes none.
    let refused = 0;
    await page
      .waitForResponse(
        (response) => {
          if (new URL(response.url()).pathname !== `/api/requests/${id}`) return false;
          if (response.status() === 401) refused += 1;
          return refused >= 2;
        },
        { timeout: 7_000 },
      )
      .catch(() => undefined);
    expect(refused, 'reads of the followed request after logging out').toBe(0);
  }, 90_000);
});

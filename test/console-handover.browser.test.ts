/**
 * Three console tabs of one browser; the tab holding the live stream goes away. A request
 * answered while the stream changes hands reaches every tab: each reads its list again once the
 * next holder is live (the third tab, already "live", never did, and missed it).
 */
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { chrome, launchChromium } from './helpers/console-browser.ts';

describe.skipIf('missing' in chrome)('the stream handed over between three tabs', () => {
  let browser: Browser;
  let context: BrowserContext;
  let stack: AdminStack;

  beforeAll(async () => {
    stack = await startAdminStack({});
    browser = await launchChromium();
    context = await browser.newContext();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it('a request answered during the handover reaches every remaining tab', async () => {
    const open = async (page: Page) => {
      await page.goto(`${stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
      await page.locator('#live.on').waitFor();
    };
    const holder = await context.newPage();
    await open(holder);
    // The next tab's stream is held at the network until the test lets it through.
    const next = await context.newPage();
    let streamAsked: (route: Route) => void = () => undefined;
    const asked = new Promise<Route>((resolve) => {
      streamAsked = resolve;
    });
    await next.route('**/api/stream', (route) => streamAsked(route));
    await open(next);
    const third = await context.newPage();
    await open(third);

    await holder.close();
    // The next tab has the lock and asks for the stream: nobody is reading it now.
    const route = await asked;
    expect((await stack.post('wake', { text: 'during the handover' })).status).toBe(200);
    const id = stack.journal.list()[0]?.id as string;
    await route.continue();

    // The new holder reads its list again once live: the request is there.
    await next.locator(`#request-rows tr[data-id="${id}"]`).waitFor({ timeout: 15_000 });
    // The third tab says 'live' too; it must list it as well.
    const shown = await third
      .locator(`#request-rows tr[data-id="${id}"]`)
      .waitFor({ timeout: 8_000 })
      .then(() => true)
      .catch(() => false);
    expect(await third.locator('#live.on').count()).toBe(1);
    expect(shown, 'the third tab lists the request answered during the handover').toBe(true);
  }, 90_000);
});

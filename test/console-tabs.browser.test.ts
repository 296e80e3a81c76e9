/**
 * The console open in several tabs of one browser. A browser opens at most six connections to
 * one host; with a live stream per tab, six tabs took them all and every other call of every
 * tab (a request's detail, a filter, a retry) waited for ever while the page still said "live".
 * One tab now holds the stream and passes it on to the others; closing it hands it over.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { chrome, launchChromium } from './helpers/console-browser.ts';

describe.skipIf('missing' in chrome)('the console in several tabs', () => {
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

  it('with six tabs open, a tab still opens a request it lists', async () => {
    const pages: Page[] = [];
    for (let i = 0; i < 6; i += 1) {
      const page = await context.newPage();
      await page.goto(`${stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
      await page.locator('#live.on').waitFor();
      pages.push(page);
    }
    expect((await stack.post('wake', { text: 'look at me' })).status).toBe(200);
    const id = stack.journal.list()[0]?.id as string;
    const page = pages[5] as Page;
    // The live list works: the row arrives over the stream.
    const row = page.locator(`#request-rows tr[data-id="${id}"]`);
    await row.waitFor();
    await row.click();
    // The detail needs one more call to the listener.
    const shown = await page
      .locator('#detail h2')
      .waitFor({ timeout: 15_000 })
      .then(() => true)
      .catch(() => false);
    expect(shown, "the request's detail opened").toBe(true);
    // Whichever tab held the stream closes: another takes it over and the list stays live.
    for (const closing of pages.slice(0, 5)) await closing.close();
    expect((await stack.post('wake', { text: 'after the others closed' })).status).toBe(200);
    const next = stack.journal.list()[0]?.id as string;
    await page.locator(`#request-rows tr[data-id="${next}"]`).waitFor({ timeout: 15_000 });
  }, 90_000);
});

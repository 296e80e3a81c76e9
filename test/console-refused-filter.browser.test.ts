/**
 * A filter the list refuses (a status such as "40", which no request can have): the console
 * says the filter is refused and why, not that the list could not be read, and shows no rows.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { chrome, countListReadsDone, launchChromium, rowIds } from './helpers/console-browser.ts';

describe.skipIf('missing' in chrome)('a refused filter', () => {
  let browser: Browser;
  let stack: AdminStack;

  beforeAll(async () => {
    stack = await startAdminStack({});
    browser = await launchChromium();
    expect((await stack.post('wake', { text: 'one' })).status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it('a status the list cannot use is shown as refused, with the reason', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const done = await countListReadsDone(page);
    await page.goto(`${stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
    await page.locator('#live.on').waitFor();
    await expect.poll(() => rowIds(page)).toHaveLength(1);
    const before = await done();

    await page.fill('#filters input[name="status"]', '40');
    await page.click('#filters button[type="submit"]');
    await expect.poll(done).toBe(before + 1);

    expect(await rowIds(page)).toEqual([]);
    const note = page.locator('#empty');
    expect(await note.isVisible()).toBe(true);
    expect(await note.textContent()).toBe(
      'The filter is refused: status must be a status such as 401 or a class such as 4xx.',
    );
    await context.close();
  }, 90_000);
});

/**
 * The page load's second list read fails (a connection reset): the first, which succeeded, is
 * still shown (only the newest read was shown, so the list stayed empty).
 */
import type { Route } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from './helpers/admin.ts';
import { chrome, countListsRendered, useConsoleStack } from './helpers/console-browser.ts';

describe.skipIf('missing' in chrome)('the newest list read fails', () => {
  const consoleStack = useConsoleStack({});

  it("an older read that succeeded is still shown when the page load's live read fails", async () => {
    expect((await consoleStack.stack.post('wake', { text: 'one' })).status).toBe(200);
    const id = consoleStack.stack.journal.list()[0]?.id as string;
    const context = await consoleStack.browser.newContext();
    const page = await context.newPage();
    const rendered = await countListsRendered(page);

    // open()'s read is held until the live transition's read has failed (a dropped connection).
    let reads = 0;
    let first: Route | undefined;
    let secondFailed: () => void = () => undefined;
    const failed = new Promise<void>((resolve) => {
      secondFailed = resolve;
    });
    await page.route('**/api/requests', async (route) => {
      reads += 1;
      if (reads === 1) {
        first = route;
        return;
      }
      if (reads === 2) {
        await route.abort('connectionreset');
        secondFailed();
        return;
      }
      await route.continue();
    });
    await page.goto(`${consoleStack.stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
    await page.locator('#live.on').waitFor();
    await failed;
    // The older read answers, with the request in it.
    await first?.continue();
    await expect.poll(rendered).toBe(1);

    const ids = await page
      .locator('#request-rows tr')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id')));
    expect(ids, 'the request the successful read listed').toEqual([id]);
    expect(await page.locator('#empty').isVisible(), '"No requests yet." is not shown').toBe(false);
    await context.close();
  }, 90_000);
});

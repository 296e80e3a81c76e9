/**
 * A filter applied while an unfiltered read is in flight (the stream coming live) keeps its
 * filtered list: only the newest read is shown (the older, unfiltered one overwrote it).
 */
import type { Route } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from './helpers/admin.ts';
import { chrome, countListsRendered, useConsoleStack } from './helpers/console-browser.ts';

describe.skipIf('missing' in chrome)('a filter applied during the live transition read', () => {
  const consoleStack = useConsoleStack({});

  it('the filtered list is not overwritten by the unfiltered read of the transition to live', async () => {
    expect((await consoleStack.stack.post('wake', { text: 'one' })).status).toBe(200);
    expect((await consoleStack.stack.post('wake', { text: 'two' })).status).toBe(200);
    const [second, first] = consoleStack.stack.journal.list().map((r) => r.id);
    const context = await consoleStack.browser.newContext();
    const page = await context.newPage();
    const rendered = await countListsRendered(page);

    // The second unfiltered read of the page load (setLive(true)'s) is held.
    let unfiltered = 0;
    let heldRoute: Route | undefined;
    let onHeld: () => void = () => undefined;
    const isHeld = new Promise<void>((resolve) => {
      onHeld = resolve;
    });
    await page.route(
      (url) => url.pathname === '/api/requests',
      async (route) => {
        if (new URL(route.request().url()).search === '') {
          unfiltered += 1;
          if (unfiltered === 2) {
            heldRoute = route;
            onHeld();
            return;
          }
        }
        await route.continue();
      },
    );
    await page.goto(`${consoleStack.stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
    await page.locator('#live.on').waitFor();
    await isHeld;
    // open()'s read has been rendered: both requests listed.
    await expect.poll(rendered).toBe(1);
    await page.locator(`#request-rows tr[data-id="${second}"]`).waitFor();

    // The user filters on the first request's id; the filtered list is shown.
    await page.fill('#filters input[name="q"]', first as string);
    await page.click('#filters button[type="submit"]');
    await expect.poll(rendered).toBe(2);
    expect(
      await page
        .locator('#request-rows tr')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id'))),
    ).toEqual([first]);

    // The transition's read, asked before the filter, answers now.
    await heldRoute?.continue();
    await expect.poll(rendered).toBe(3);
    const ids = await page
      .locator('#request-rows tr')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id')));
    expect(ids, 'rows under the filter q=<first id>').toEqual([first]);
    await context.close();
  }, 90_000);
});

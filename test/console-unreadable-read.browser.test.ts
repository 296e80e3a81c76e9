/**
 * A list read answered 200 with a body that cannot be read (cut off, a proxy's HTML) is a failed
 * read: it neither empties the list nor hides an older read that succeeded.
 */
import type { Route } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from './helpers/admin.ts';
import { chrome, countListReadsDone, rowIds, useConsoleStack } from './helpers/console-browser.ts';

describe.skipIf('missing' in chrome)('a list read with an unreadable body', () => {
  const held = useConsoleStack({});

  it('a 200 read whose body is cut off does not empty the list nor hide the older good read', async () => {
    const { stack, browser } = held;
    expect((await stack.post('wake', { text: 'one' })).status).toBe(200);
    const id = stack.journal.list()[0]?.id as string;
    const context = await browser.newContext();
    const page = await context.newPage();
    // List reads whose body was read, well or not (a task after: loadList has gone on).
    const settled = await countListReadsDone(page);

    let reads = 0;
    let first: Route | undefined;
    await page.route('**/api/requests', async (route) => {
      reads += 1;
      if (reads === 1) {
        first = route;
        return;
      }
      if (reads === 2) {
        // The live transition's read: 200, but the body stops part way.
        await route.fulfill({
          status: 200,
          contentType: 'application/json',
          body: '{"requests":[',
        });
        return;
      }
      await route.continue();
    });
    await page.goto(`${stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
    await page.locator('#live.on').waitFor();
    await expect.poll(settled).toBe(1);
    await first?.continue();
    await expect.poll(settled).toBe(2);

    expect(await rowIds(page), 'the request the successful read listed').toEqual([id]);
    expect(await page.locator('#empty').isVisible(), '"No requests yet." is not shown').toBe(false);
    await context.close();
  }, 90_000);
});

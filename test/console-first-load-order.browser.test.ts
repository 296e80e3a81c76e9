/**
 * A page load reads the list twice (before the stream and once it is live); a request answered
 * before the stream listens stays listed when the first read answers last (its older snapshot
 * replaced the newer one's rows).
 */
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from './helpers/admin.ts';
import { chrome, countListsRendered, useConsoleStack } from './helpers/console-browser.ts';

describe.skipIf('missing' in chrome)('the two list reads of a page load', () => {
  const consoleStack = useConsoleStack({});

  it('a request answered before the stream listens stays listed when the first read answers last', async () => {
    const context = await consoleStack.browser.newContext();
    const page = await context.newPage();
    const rendered = await countListsRendered(page);

    // The stream is let through once the first list snapshot is taken and a request answered.
    let openStream: () => void = () => undefined;
    const streamMayOpen = new Promise<void>((resolve) => {
      openStream = resolve;
    });
    await page.route('**/api/stream', async (route) => {
      await streamMayOpen;
      await route.continue();
    });
    let arrived = '';
    let reads = 0;
    await page.route('**/api/requests', async (route) => {
      reads += 1;
      if (reads !== 1) return route.continue();
      // open()'s read: the snapshot as the server has it now, before the request below.
      const response = await route.fetch();
      expect((await consoleStack.stack.post('wake', { text: 'between' })).status).toBe(200);
      const id = consoleStack.stack.journal.list()[0]?.id as string;
      openStream();
      // The read asked once live has it and shows it.
      await page.locator(`#request-rows tr[data-id="${id}"]`).waitFor({ timeout: 15_000 });
      arrived = id;
      // Then open()'s older snapshot answers.
      await route.fulfill({ response });
    });
    await page.goto(`${consoleStack.stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
    await page.locator('#live.on').waitFor({ timeout: 15_000 });
    await expect.poll(() => arrived, { timeout: 20_000 }).not.toBe('');
    await expect.poll(rendered, { timeout: 10_000 }).toBe(2);

    const ids = await page
      .locator('#request-rows tr')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id')));
    expect(ids, 'the request answered before the stream listened').toContain(arrived);
    await context.close();
  }, 90_000);
});

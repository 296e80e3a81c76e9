/**
 * Under a filter with steady traffic (each streamed row asks for the filtered list again), a
 * filtered read is shown although a newer one was asked before it answered (with only the
 * newest shown, none ever was, and the unfiltered list stayed under the filter).
 */
import type { Route } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from './helpers/admin.ts';
import { chrome, countListsRendered, useConsoleStack } from './helpers/console-browser.ts';

describe.skipIf('missing' in chrome)('a filter under steady traffic', () => {
  const consoleStack = useConsoleStack({});

  it('a filtered read is shown although a newer one was asked before it answered', async () => {
    expect((await consoleStack.stack.post('wake', { text: 'one' })).status).toBe(200);
    expect((await consoleStack.stack.post('wake', { text: 'two' })).status).toBe(200);
    const [second, first] = consoleStack.stack.journal.list().map((r) => r.id);
    const context = await consoleStack.browser.newContext();
    const page = await context.newPage();
    const rendered = await countListsRendered(page);
    const rowIds = () =>
      page
        .locator('#request-rows tr')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id')));

    await page.goto(`${consoleStack.stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
    await page.locator('#live.on').waitFor();
    // Both unfiltered reads of the page load (open()'s and the live transition's) are in.
    await expect.poll(rendered).toBe(2);
    await expect.poll(rowIds).toEqual([second, first]);

    // Reads slower than the traffic: a filtered read answers only once the next one is asked.
    const held: Route[] = [];
    let arrivedCount = 0;
    await page.route(
      (url) => url.pathname === '/api/requests' && url.search !== '',
      async (route) => {
        arrivedCount += 1;
        held.at(-1)?.continue();
        held.push(route);
      },
    );
    const arrived = () => arrivedCount;

    await page.fill('#filters input[name="q"]', first as string);
    await page.click('#filters button[type="submit"]');
    await expect.poll(arrived).toBe(1);
    // A request comes: the list is asked again under the filter; the filter's own read answers.
    expect((await consoleStack.stack.post('wake', { text: 'three' })).status).toBe(200);
    await expect.poll(arrived).toBe(2);
    // Another comes before that read answers; the first refetch answers now.
    expect((await consoleStack.stack.post('wake', { text: 'four' })).status).toBe(200);
    await expect.poll(arrived).toBe(3);
    // Two filtered reads have answered, each with the filtered list.
    await expect.poll(rendered).toBe(4);

    expect(await rowIds(), `rows under the filter q=${first}`).toEqual([first]);
    await context.close();
  }, 90_000);
});

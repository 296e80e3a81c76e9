/**
 * A console tab opened while another of the browser holds the live stream: a request answered
 * during its first list read is listed (the tab ignored the stream's messages until after that
 * read, and its snapshot was from before the request).
 */
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { chrome, countListsRendered, launchChromium } from './helpers/console-browser.ts';

describe.skipIf('missing' in chrome)('a tab opened next to the holder', () => {
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

  it('lists a request answered during its first list read', async () => {
    const url = `${stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`;
    const holder = await context.newPage();
    await holder.goto(url);
    await holder.locator('#live.on').waitFor();

    const next = await context.newPage();
    await countListsRendered(next);
    // A listener of the same channel, made before the console's own: it sees each broadcast
    // just before the console's channel does.
    await next.addInitScript(() => {
      const w = globalThis as unknown as { __seen: string[] };
      w.__seen = [];
      new BroadcastChannel('hookgate-console').addEventListener('message', (event) => {
        const m = (event as unknown as { data: unknown }).data as {
          kind?: string;
          summaries?: Array<{ id?: string }>;
        };
        if (m?.kind === 'requests')
          for (const summary of m.summaries ?? []) if (summary.id) w.__seen.push(summary.id);
      });
    });
    let arrived = '';
    let first = true;
    await next.route('**/api/requests', async (route) => {
      if (!first) return route.continue();
      first = false;
      // The list as the server has it now, before the request below.
      const response = await route.fetch();
      expect((await stack.post('wake', { text: 'during the first read' })).status).toBe(200);
      const id = stack.journal.list()[0]?.id as string;
      // The holder has it and has broadcast it; this tab has been told.
      await holder.locator(`#request-rows tr[data-id="${id}"]`).waitFor({ timeout: 10_000 });
      await next.waitForFunction(
        (wanted) => (globalThis as unknown as { __seen: string[] }).__seen.includes(wanted),
        id,
        { timeout: 10_000 },
      );
      arrived = id;
      await route.fulfill({ response });
    });
    await next.goto(url);
    await next.locator('#live.on').waitFor({ timeout: 15_000 });
    await expect.poll(() => arrived, { timeout: 15_000 }).not.toBe('');
    // The held first list read has been rendered.
    await next.waitForFunction(
      () => (globalThis as unknown as { __listsRendered: number }).__listsRendered >= 1,
      undefined,
      { timeout: 10_000 },
    );

    // A request after it reaches the tab over the channel (the tab is live and listening).
    expect((await stack.post('wake', { text: 'after' })).status).toBe(200);
    const later = stack.journal.list()[0]?.id as string;
    await next.locator(`#request-rows tr[data-id="${later}"]`).waitFor({ timeout: 10_000 });

    const ids = await next
      .locator('#request-rows tr')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id')));
    expect(ids, 'the request answered during the first list read is listed').toContain(arrived);
  }, 90_000);
});

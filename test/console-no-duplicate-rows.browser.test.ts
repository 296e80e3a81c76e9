/**
 * A request that a list read and the stream both bring, in either order, is listed once (a
 * stream message handled after a list read that already had it added a second row).
 */
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { chrome, launchChromium } from './helpers/console-browser.ts';

describe.skipIf('missing' in chrome)('a broadcast handled after the list read', () => {
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

  it('lists the request once', async () => {
    const url = `${stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`;
    const holder = await context.newPage();
    await holder.goto(url);
    await holder.locator('#live.on').waitFor();

    const other = await context.newPage();
    // The channel's 'requests' messages can be held back (a slow delivery), then let through.
    await other.addInitScript(() => {
      const w = globalThis as unknown as {
        __hold: boolean;
        __held: Array<() => void>;
        __heldIds: string[];
        __release: () => void;
      };
      w.__hold = false;
      w.__held = [];
      w.__heldIds = [];
      w.__release = () => {
        w.__hold = false;
        for (const deliver of w.__held.splice(0)) deliver();
      };
      type Listen = (
        this: unknown,
        type: string,
        listener: (event: { data: unknown }) => void,
      ) => void;
      const proto = BroadcastChannel.prototype as unknown as { addEventListener: Listen };
      const add = proto.addEventListener;
      proto.addEventListener = function (this: unknown, type, listener) {
        if (type !== 'message') return add.call(this, type, listener);
        return add.call(this, type, (event) => {
          const m = event.data as { kind?: string; summaries?: Array<{ id?: string }> };
          if (w.__hold && m?.kind === 'requests') {
            for (const summary of m.summaries ?? []) w.__heldIds.push(summary.id ?? '');
            w.__held.push(() => listener.call(this, event));
          } else listener.call(this, event);
        });
      };
    });
    await other.goto(url);
    await other.locator('#live.on').waitFor();

    await other.evaluate(() => {
      (globalThis as unknown as { __hold: boolean }).__hold = true;
    });
    expect((await stack.post('wake', { text: 'once' })).status).toBe(200);
    const id = stack.journal.list()[0]?.id as string;
    await holder.locator(`#request-rows tr[data-id="${id}"]`).waitFor();
    await other.waitForFunction(
      (wanted) => (globalThis as unknown as { __heldIds: string[] }).__heldIds.includes(wanted),
      id,
    );
    // The list is read (the Filter button with no filter): it has the request.
    const listed = other.waitForResponse(
      (response) => new URL(response.url()).pathname === '/api/requests',
    );
    await other.locator('#filters button[type="submit"]').click();
    await listed;
    await other.locator(`#request-rows tr[data-id="${id}"]`).first().waitFor();
    // Then the stream's copy of it is handled.
    await other.evaluate(() => (globalThis as unknown as { __release: () => void }).__release());
    // A request after it, so the copy above has been handled when the rows are counted.
    expect((await stack.post('wake', { text: 'after' })).status).toBe(200);
    const later = stack.journal.list()[0]?.id as string;
    await other.locator(`#request-rows tr[data-id="${later}"]`).waitFor();
    expect(await other.locator(`#request-rows tr[data-id="${id}"]`).count()).toBe(1);
  }, 90_000);
});

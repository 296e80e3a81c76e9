/**
 * Attack: a flood of refused requests (about a thousand a second) kept the console's tab busy
 * redrawing its list once per streamed request (each looked for among a thousand rows, then
 * put on top, one DOM insertion each), so its answers to the operator slowed to seconds. The
 * list is now redrawn at most once per animation frame, with every row that came meanwhile;
 * none is lost, doubled or out of order. And under such a flood the real traffic stays one
 * filter away (the refusals are held apart in the journal: attack-journal-refusal-flood).
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestFinished } from '../engine/observe/events.ts';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { chrome, launchChromium, rowIds } from './helpers/console-browser.ts';
import { answeredExchange, refused } from './helpers/journal-records.ts';
import { pipelined } from './helpers/raw-http.ts';
import { waitFor } from './helpers/runtime.ts';

/** A refused request as the handler publishes it. */
function refusal(i: number) {
  return refused(answeredExchange('/hooks/wake', { hook: `guess-${i}` }));
}

/** Count the DOM insertions into the list from now on (each a redraw of it). */
async function countInsertions(page: Page): Promise<() => Promise<number>> {
  await page.evaluate(() => {
    type Observed = Array<{ addedNodes: { length: number } }>;
    const w = globalThis as unknown as {
      __insertions: number;
      document: { getElementById(id: string): unknown };
      MutationObserver: new (
        callback: (records: Observed) => void,
      ) => { observe(target: unknown, options: { childList: boolean }): void };
    };
    w.__insertions = 0;
    new w.MutationObserver((records) => {
      for (const record of records) if (record.addedNodes.length > 0) w.__insertions += 1;
    }).observe(w.document.getElementById('request-rows'), { childList: true });
  });
  return () =>
    page.evaluate(() => (globalThis as unknown as { __insertions: number }).__insertions);
}

describe.skipIf('missing' in chrome)(
  'attack: a flood of refusals redraws the console per request',
  () => {
    let browser: Browser;
    let stack: AdminStack;
    let page: Page;
    const real: string[] = [];

    beforeAll(async () => {
      stack = await startAdminStack({});
      browser = await launchChromium();
      for (const text of ['real one', 'real two']) {
        expect((await stack.post('wake', { text })).status).toBe(200);
        real.unshift(stack.journal.list()[0]?.id as string);
      }
      page = await browser.newPage();
      await page.goto(`${stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
      await page.locator('#live.on').waitFor();
      await waitFor('both real requests listed', async () =>
        JSON.stringify(await rowIds(page)) === JSON.stringify(real) ? true : undefined,
      );
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await stack?.stop();
    });

    it('a burst of 300 streamed requests is drawn in a few redraws, every row once, newest on top', async () => {
      const insertions = await countInsertions(page);
      for (let i = 0; i < 300; i++) requestFinished.publish(refusal(i));
      const listed = stack.journal.list().map((r) => r.id);
      expect(listed).toHaveLength(302);
      await expect.poll(() => rowIds(page), { timeout: 30_000 }).toEqual(listed);
      // One per request before; now one per animation frame in which rows came.
      expect(await insertions()).toBeLessThan(30);
    }, 60_000);

    it('under a flood over HTTP the list keeps up, and the real traffic is one filter away', async () => {
      const requests = Array.from(
        { length: 1100 },
        (_, i) =>
          `POST ${stack.hooksPath}/wake HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong\r\n` +
          `Content-Type: application/json\r\nContent-Length: 2\r\n${i === 1099 ? 'Connection: close\r\n' : ''}\r\n{}`,
      );
      await pipelined(stack.hooksUrl, requests);
      const newest = stack.journal
        .list()
        .slice(0, 1000)
        .map((r) => r.id);
      // The console lists 1,000 rows: the newest, all refusals.
      await expect.poll(() => rowIds(page), { timeout: 60_000 }).toEqual(newest);
      await page.selectOption('#filters select[name="authenticated"]', 'true');
      await page.click('#filters button[type="submit"]');
      await expect.poll(() => rowIds(page), { timeout: 30_000 }).toEqual(real);
      await page.click(`#request-rows tr[data-id="${real[0]}"]`);
      await expect.poll(() => page.locator('#detail').textContent()).toContain(real[0] as string);
      const detail = (await page.locator('#detail').textContent()) as string;
      expect(detail).toContain('authenticated');
      expect(detail).not.toContain('not authenticated');
    }, 120_000);
  },
);

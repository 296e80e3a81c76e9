/**
 * The console left open while hookgate restarts underneath: once its live stream is back, the
 * list is the new process's (a request the new process answered before the stream was back is
 * listed, the old journal's rows are gone). It was read again only when a stream ended, so the
 * page kept the old process's rows and missed the new ones.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './helpers/hookgate.ts';
import {
  ADMIN_TOKEN,
  chrome,
  launchChromium,
  type Restartable,
  startRestartable,
} from './helpers/console-browser.ts';

describe.skipIf('missing' in chrome)('the console across a restart of hookgate', () => {
  const temp = tempDir('console-restart-');
  let browser: Browser;
  let page: Page;
  let stack: Restartable | undefined;

  beforeAll(async () => {
    browser = await launchChromium();
    page = await browser.newPage();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    temp.cleanup();
  });

  it('after the restart the list shows the new process requests, not the old ones', async () => {
    const first = await startRestartable(temp.dir, 0);
    stack = first;
    await first.startAdminNow();
    const adminPort = Number(new URL(first.adminUrl).port);
    await page.goto(`${first.adminUrl}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
    await page.locator('#live.on').waitFor();
    expect((await first.post('wake', { text: 'before restart' })).status).toBe(200);
    const oldId = first.journal.list()[0]?.id as string;
    await page.locator(`#request-rows tr[data-id="${oldId}"]`).waitFor();

    // The process stops; the console notices.
    await first.stop();
    stack = undefined;
    await page.locator('#live:not(.on)').waitFor();

    // The new process takes a request before the operator's page is connected again.
    const second = await startRestartable(temp.dir, adminPort);
    stack = second;
    expect((await second.post('wake', { text: 'after restart' })).status).toBe(200);
    const newId = second.journal.list()[0]?.id as string;
    await second.startAdminNow();
    expect(second.adminUrl).toBe(first.adminUrl);

    await page.locator('#live.on').waitFor({ timeout: 20_000 });
    // The list is the new process's: its request is there, the old journal's row is gone.
    await page
      .locator(`#request-rows tr[data-id="${newId}"]`)
      .waitFor({ timeout: 10_000 })
      .catch(() => undefined);
    const ids = await page
      .locator('#request-rows tr')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id')));
    expect(ids).toEqual([newId]);
  }, 120_000);
});

/**
 * Attack on the console's reader: a body that is one long run of characters with no place to
 * break a line, in scripts where laying it out costs Chromium time that grows with the square
 * of the run. 60,000 emoji skin-tone modifiers after a thumbs-up (240 KB, under the body
 * limit; they are not combining marks, so the console drew them all) held the tab for minutes,
 * and one Arabic word of 120,000 letters for some twelve seconds, at every refresh while a run
 * was followed. Long runs now get a line-break opportunity every 64 characters (a <wbr>, which
 * adds nothing to the text read or copied), and lay out in well under a second.
 */
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { ensureChromium } from './helpers/chromium.ts';

const chrome = ensureChromium();
if ('missing' in chrome) console.warn(`skipping the console's browser tests: ${chrome.missing}`);

// Generous on a loaded machine; the runs took minutes and twelve seconds before.
const SHOWN_WITHIN_MS = 8_000;

describe.skipIf('missing' in chrome)('long unbreakable runs in the console', () => {
  let browser: Browser;
  let page: Page;
  let stack: AdminStack;

  beforeAll(async () => {
    stack = await startAdminStack({}, { admin: { keepPayloads: true } });
    browser = await chromium.launch({
      executablePath: (chrome as { path: string }).path,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  /** Loads the console, opens the newest request, and says how long its body took to show. */
  async function openNewest(): Promise<number> {
    page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    await page.goto(`${stack.admin.url}/#token=${ADMIN_TOKEN}`);
    const row = page.locator(`#request-rows tr[data-id="${stack.journal.list()[0]?.id}"]`);
    await row.waitFor();
    const started = Date.now();
    await row.click();
    await page.locator('#detail pre.body').waitFor({ timeout: 5 * 60_000 });
    return Date.now() - started;
  }

  it.each([
    ['emoji modifiers after one emoji', `\u{1F44D}${'\u{1F3FB}'.repeat(60_000)}`, '\u{1F3FB}'],
    ['one Arabic word', '\u0644'.repeat(120_000), '\u0644'],
  ])(
    '%s: the detail is shown at once, the text whole',
    async (_name, text, unit) => {
      expect((await stack.post('wake', JSON.stringify({ text }))).status).toBe(200);
      try {
        const tookMs = await openNewest();
        const body = (await page.locator('#detail pre.body').textContent()) ?? '';
        expect(body.split(unit).length - 1).toBe(text.split(unit).length - 1);
        expect(tookMs).toBeLessThan(SHOWN_WITHIN_MS);
      } finally {
        await page.close();
      }
    },
    6 * 60_000,
  );
});

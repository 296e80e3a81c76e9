/**
 * Attack on the console's reader: text that hides or hangs. Invisible characters the console
 * did not escape (soft hyphen, combining grapheme joiner, Hangul fillers, a Mongolian vowel
 * separator, deprecated format controls, variation selectors, U+E0100...) are each 0 px wide:
 * "pay...bob" read as "paybob" while the agent got them all. And a letter followed by 120,000
 * combining marks (240 KB, under the body limit) took Chromium some twelve seconds to lay out,
 * at each refresh while a run was followed. Every invisible character is now shown as an escape,
 * and marks past 30 on one letter are counted, not drawn.
 */
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { ensureChromium } from './helpers/chromium.ts';

const chrome = ensureChromium();
if ('missing' in chrome) console.warn(`skipping the console's browser tests: ${chrome.missing}`);

const INVISIBLES = [0xad, 0x34f, 0x115f, 0x180e, 0x206a, 0x3164, 0xfe0f, 0xffa0, 0xe0100];

describe.skipIf('missing' in chrome)('invisible characters and piled marks in the console', () => {
  let browser: Browser;
  let page: Page;
  let stack: AdminStack;

  beforeAll(async () => {
    stack = await startAdminStack({}, { admin: { keepPayloads: true } });
    browser = await chromium.launch({
      executablePath: (chrome as { path: string }).path,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  /** Opens the newest of `requests` kept requests: a load from blank, so the list is fetched anew. */
  async function openNewest(requests: number): Promise<void> {
    await page.goto('about:blank');
    await page.goto(`${stack.admin.url}/#token=${ADMIN_TOKEN}`);
    await page
      .locator('#request-rows tr')
      .nth(requests - 1)
      .waitFor();
    await page.locator('#request-rows tr').first().click();
    await page.locator('#detail pre.body').waitFor({ timeout: 60_000 });
  }

  it('every invisible character of a text is shown as an escape', async () => {
    const text = `pay${INVISIBLES.map((code) => String.fromCodePoint(code)).join('')}bob`;
    expect((await stack.post('wake', { text })).status).toBe(200);
    await openNewest(1);
    const shown = (await page.locator('#detail').textContent()) ?? '';
    expect(INVISIBLES.filter((code) => shown.includes(String.fromCodePoint(code)))).toEqual([]);
    for (const code of INVISIBLES) expect(shown).toContain(`\\u{${code.toString(16)}}`);
  }, 60_000);

  it('marks piled on one letter are counted past 30, not drawn', async () => {
    const text = `a${'\u0301'.repeat(120_000)}`;
    expect((await stack.post('wake', JSON.stringify({ text }))).status).toBe(200);
    await openNewest(2);
    const body = (await page.locator('#detail pre.body').first().textContent()) ?? '';
    expect(body).toContain('(+119970 marks)');
    expect(body.length).toBeLessThan(1_000);
  }, 120_000);
});

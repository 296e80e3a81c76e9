/**
 * Attack on the console's line wrapping: a long run with no place to break a line gets a <wbr>
 * every so often (laid out whole, such runs held the tab for minutes), but the break was put
 * after any 64 characters that were not followed by a combining mark. Emoji skin tones and
 * regional indicators are not marks, so `a` then thumbs-up-with-skin-tone emoji wrapped between
 * a thumb and its skin tone, and an odd letter before flags wrapped inside a flag (two letters
 * drawn where a flag was); a break could also land inside a `\u{200d}` escape shown for a ZWJ.
 * Breaks now fall only between graphemes and outside escapes; the text read or copied is the
 * text sent.
 */
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { ensureChromium } from './helpers/chromium.ts';

const chrome = ensureChromium();
if ('missing' in chrome) console.warn(`skipping the console's browser tests: ${chrome.missing}`);

const THUMB_MEDIUM = '\u{1F44D}\u{1F3FD}';
const FLAG_FR = '\u{1F1EB}\u{1F1F7}';
const FAMILY = '\u{1F468}\u200D\u{1F469}\u200D\u{1F467}\u200D\u{1F466}';
const RAINBOW_FLAG = '\u{1F3F3}\uFE0F\u200D\u{1F308}';
const ENGLAND = '\u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}';

/** The text as the console shows it: invisible characters (ZWJ, selectors, tags) as escapes. */
function shownAs(text: string): string {
  return text.replace(
    /[\u200D\uFE0F\u{E0000}-\u{E007F}]/gu,
    (char) => `\\u{${(char.codePointAt(0) as number).toString(16)}}`,
  );
}

type Wrapping = { text: string; breaks: number[]; splitGraphemes: string[]; longestRun: number };

/** The body element's text, the offsets of its <wbr>s, and those that fall inside a grapheme or an escape. */
async function wrapping(page: Page): Promise<Wrapping> {
  return page.locator('#detail pre.body').evaluate((pre) => {
    const breaks: number[] = [];
    let text = '';
    for (const node of pre.childNodes) {
      if (node.nodeName === 'WBR') breaks.push(text.length);
      else text += node.textContent ?? '';
    }
    const starts = new Set<number>([text.length]);
    for (const { index } of new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(
      text,
    ))
      starts.add(index);
    const escapes = [...text.matchAll(/\\u\{[0-9a-f]+\}/g)].map((m): [number, number] => [
      m.index,
      m.index + m[0].length,
    ]);
    const splitGraphemes = breaks
      .filter((at) => !starts.has(at) || escapes.some(([from, to]) => at > from && at < to))
      .map((at) => JSON.stringify(text.slice(Math.max(0, at - 12), at + 12)));
    let longestRun = 0;
    let last = 0;
    for (const at of [...breaks, text.length]) {
      longestRun = Math.max(longestRun, [...text.slice(last, at)].length);
      last = at;
    }
    return { text, breaks, splitGraphemes, longestRun };
  });
}

describe.skipIf('missing' in chrome)('wrapping long runs between graphemes only', () => {
  let browser: Browser;
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

  // Each run follows the body's `{"text":"` (9 characters): emoji pairs then start at an odd
  // character, as after `a` alone.
  it.each([
    ['skin-tone emoji after 9 characters', THUMB_MEDIUM.repeat(300)],
    ['skin-tone emoji after 11 characters', `ab${THUMB_MEDIUM.repeat(300)}`],
    ['flags after 9 characters', FLAG_FR.repeat(300)],
    ['flags after 11 characters', `ab${FLAG_FR.repeat(300)}`],
    [
      'ZWJ families, rainbow and England flags',
      `ab${`${FAMILY}${RAINBOW_FLAG}${ENGLAND}`.repeat(40)}`,
    ],
  ])(
    '%s: every break falls between graphemes, the text is whole',
    async (_name, run) => {
      const body = JSON.stringify({ text: run });
      expect((await stack.post('wake', body)).status).toBe(200);
      const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
      try {
        await page.goto(`${stack.admin.url}/#token=${ADMIN_TOKEN}`);
        const row = page.locator(`#request-rows tr[data-id="${stack.journal.list()[0]?.id}"]`);
        await row.click();
        await page.locator('#detail pre.body').waitFor();
        const shown = await wrapping(page);
        expect(shown.text).toBe(shownAs(body));
        expect(await page.locator('#detail pre.body').textContent()).toBe(shownAs(body));
        expect(shown.breaks.length).toBeGreaterThan(0);
        expect(shown.splitGraphemes).toEqual([]);
        expect(shown.longestRun).toBeLessThanOrEqual(128);
      } finally {
        await page.close();
      }
    },
    120_000,
  );
});

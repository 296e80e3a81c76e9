/**
 * The console opened from a link whose #token= fragment is not valid percent-encoding (a token
 * pasted by hand with a `%` in it, a link cut short): the page still shows its login form or the
 * console. The fragment was decoded unguarded, the start handler ended on the URIError, and the
 * operator got an empty page with the token left in the address bar.
 */
import { describe, expect, it } from 'vitest';
import { chrome, useConsoleStack } from './helpers/console-browser.ts';

describe.skipIf('missing' in chrome)('a #token= fragment that does not decode', () => {
  const consoleStack = useConsoleStack({});

  it('still shows the login form (or the console), not an empty page', async () => {
    const page = await consoleStack.browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${consoleStack.stack.admin.url}/#token=50%-off-token`);
    const shown = await page
      .locator('#login-form:visible, #tabs:visible')
      .first()
      .waitFor({ timeout: 10_000 })
      .then(() => true)
      .catch(() => false);
    expect({ shown, errors }).toEqual({ shown: true, errors: [] });
  }, 60_000);
});

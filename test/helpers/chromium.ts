/**
 * Chromium for the console's browser tests: Debian's /usr/bin/chromium,
 * installed with apt-get when it is missing and the tests run as root on a
 * machine that has apt-get. Without it the browser tests are skipped with a
 * message saying why.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const CHROMIUM = '/usr/bin/chromium';

/** The Chromium executable, or the sentence saying why there is none. */
export function ensureChromium(): { path: string } | { missing: string } {
  if (existsSync(CHROMIUM)) return { path: CHROMIUM };
  const root = process.getuid?.() === 0;
  const apt = existsSync('/usr/bin/apt-get');
  if (!root || !apt) {
    return {
      missing: `${CHROMIUM} is missing and cannot be installed here (${root ? 'no apt-get' : 'not root'}); install chromium to run the console's browser tests`,
    };
  }
  try {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    execFileSync('apt-get', ['update'], { stdio: 'ignore', env, timeout: 300_000 });
    execFileSync('apt-get', ['install', '-y', 'chromium'], {
      stdio: 'ignore',
      env,
      timeout: 600_000,
    });
  } catch (err) {
    return { missing: `installing chromium failed: ${(err as Error).message}` };
  }
  return existsSync(CHROMIUM)
    ? { path: CHROMIUM }
    : { missing: `${CHROMIUM} is still missing after apt-get install` };
}

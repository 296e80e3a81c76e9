/**
 * `hookgate gmail stop`: end the mailbox's watch (users.stop), so Gmail
 * stops publishing its changes. The running service renews the watch on its
 * next tick; stop it first, or remove `hooks.gmail.account`.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { openMailboxStore } from '../gmail/mailbox-store.ts';
import { STORE_FILE } from '../store/sqlite/schema.ts';
import { createMailboxClient } from '../gmail/mailbox-client.ts';
import { ConfigError } from '../config.ts';
import { gmailConfig } from './gmail-status.ts';
import type { GmailFailure } from '../gmail/outcome.ts';
import { terminalText } from './terminal-text.ts';

const TIMEOUT_MS = 15_000;

/** Stop the watch; exit 0, or 1 when it did not end (why, on stderr). */
export async function gmailStop(
  flags: { config?: string },
  out: (line: string) => void,
): Promise<number> {
  const { loaded, account } = gmailConfig(flags.config);
  if (!loaded.config.hooks.gmail.oauth.clientId) {
    throw new ConfigError('hooks.gmail.oauth.clientId', 'needed to call Gmail');
  }
  const { api } = createMailboxClient(loaded, account, TIMEOUT_MS);
  const result = await api.stop();
  if (result.kind === 'ok') {
    recordStopped(loaded.dataDir, account);
    out(`Stopped the watch of ${account}; Gmail stops publishing its changes within minutes.`);
    return 0;
  }
  process.stderr.write(`${terminalText(`hookgate: ${whyNotStopped(result, account)}`)}\n`);
  return 1;
}

/** Why users.stop did not end the watch, in the operator's terms (the watch is still on). */
function whyNotStopped(result: GmailFailure, account: string): string {
  switch (result.kind) {
    case 'needs_consent':
      return `the refresh token was refused: consent again with hookgate gmail setup --account ${account}; the watch was not stopped`;
    case 'auth':
      return 'Gmail refused the access token again after a refresh (access revoked, or the consent lacks the Gmail scope); the watch was not stopped';
    case 'backoff':
      // No answer, the token endpoint out of reach, a rate limit or a 5xx: nothing was refused.
      return `users.stop did not go through: ${result.reason}; the watch was not stopped (try again later)`;
    case 'forbidden':
      return `Gmail refused users.stop: ${result.reason}`;
    case 'failed':
      return result.reason.startsWith('Gmail HTTP ')
        ? `Gmail refused users.stop: ${result.reason}`
        : `users.stop did not go through: ${result.reason}; the watch was not stopped`;
    case 'too_large':
      return `Gmail's answer to users.stop was over ${result.maxBytes} bytes; the watch may not be stopped`;
    default:
      return `users.stop did not go through (${result.kind}); the watch was not stopped`;
  }
}

/** `gmail status` shows the watch as ended (a running service makes a new one when it is due). */
function recordStopped(dataDir: string, account: string): void {
  if (!existsSync(path.join(dataDir, STORE_FILE))) return;
  const store = openMailboxStore(dataDir);
  try {
    const now = Date.now();
    store.recordWatch(account, now, now);
  } finally {
    store.close();
  }
}

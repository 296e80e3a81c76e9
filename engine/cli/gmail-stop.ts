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

const TIMEOUT_MS = 15_000;

/** Stop the watch; exit 0, or 1 when Gmail refused. */
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
  process.stderr.write(`hookgate: Gmail refused users.stop (${result.kind})\n`);
  return 1;
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

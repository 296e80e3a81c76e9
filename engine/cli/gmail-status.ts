/**
 * `hookgate gmail status`: the watched mailbox as the running service (or
 * the last one) left it: the watch's expiry, the cursor, the last push and
 * sync, the last error, pushes waiting for a sync, and whether the operator
 * must consent again. Reads the store; changes nothing.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { STORE_FILE } from '../store/sqlite/schema.ts';
import { ConfigError, findConfigFile, type LoadedConfig, loadConfigFile } from '../config.ts';
import { openMailboxStore } from '../gmail/mailbox-store.ts';
import { jsonLine, terminalText } from './terminal-text.ts';

/** Load the config and its Gmail account, or explain what is missing. */
export function gmailConfig(configFlag: string | undefined): {
  loaded: LoadedConfig;
  account: string;
} {
  const file = findConfigFile(configFlag, process.env, process.cwd());
  if (!file)
    throw new ConfigError(
      '',
      'no config file found (--config, HOOKGATE_CONFIG or ./hookgate.yaml)',
    );
  const loaded = loadConfigFile(file, process.env);
  const account = loaded.config.hooks.gmail.account;
  if (!account) {
    throw new ConfigError(
      'hooks.gmail.account',
      'no mailbox is set up (run hookgate gmail setup --account ...)',
    );
  }
  return { loaded, account };
}

const when = (ms: number | undefined) => (ms === undefined ? 'never' : new Date(ms).toISOString());

/** Print the mailbox's state; exit 0, or 1 when it needs the operator (no watch covers it, a consent). */
export function gmailStatus(
  flags: { config?: string; json?: boolean },
  out: (line: string) => void,
): number {
  const { loaded, account } = gmailConfig(flags.config);
  if (!existsSync(path.join(loaded.dataDir, STORE_FILE))) {
    out(
      terminalText(`mailbox: ${account}: nothing recorded yet (start the service: hookgate serve)`),
    );
    return 1;
  }
  const store = openMailboxStore(loaded.dataDir);
  try {
    const state = store.state(account);
    const pending = store.pendingPushes(account).length;
    const expired = state.watchExpirationMs !== undefined && state.watchExpirationMs < Date.now();
    // No watch was ever made (the service's first attempts failed): no push arrives either.
    const unwatched = state.watchExpirationMs === undefined;
    if (flags.json) {
      out(jsonLine({ ...state, pendingPushes: pending, watchExpired: expired, unwatched }));
    } else {
      out(terminalText(`mailbox: ${account}`));
      out(
        unwatched
          ? 'watch expires: no watch yet (NO PUSHES ARRIVE)'
          : `watch expires: ${when(state.watchExpirationMs)}${expired ? ' (EXPIRED: no pushes arrive)' : ''}`,
      );
      if (state.watchError !== undefined)
        out(terminalText(`last watch attempt failed: ${state.watchError}`));
      out(`watch renewed: ${when(state.watchedAtMs)}`);
      out(`cursor (history id): ${state.cursor ?? 'none yet'}`);
      out(`last push: ${when(state.lastPushAtMs)}; pushes waiting for a sync: ${pending}`);
      out(`last sync: ${when(state.lastSyncAtMs)}`);
      out(terminalText(`last error: ${state.lastError ?? 'none'}`));
      if (state.needsConsent) out(`NEEDS CONSENT: run hookgate gmail setup --account ${account}`);
    }
    return state.needsConsent || expired || unwatched ? 1 : 0;
  } finally {
    store.close();
  }
}

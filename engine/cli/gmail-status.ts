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
import { type MailboxState, readMailbox, unrecordedMailbox } from '../gmail/mailbox-store.ts';
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
    // --json stays JSON: the mailbox as a store without a record of it shows it.
    if (flags.json) return printJson(unrecordedMailbox(account), 0, out);
    out(
      terminalText(`mailbox: ${account}: nothing recorded yet (start the service: hookgate serve)`),
    );
    return 1;
  }
  const { state, pendingPushes } = readMailbox(loaded.dataDir, account);
  return flags.json ? printJson(state, pendingPushes, out) : printText(state, pendingPushes, out);
}

/** Whether a watch covers the mailbox: none was ever made (its first attempts failed), or it ran out. */
function watchOf(state: MailboxState, nowMs: number): { expired: boolean; unwatched: boolean } {
  const expired = state.watchExpirationMs !== undefined && state.watchExpirationMs < nowMs;
  return { expired, unwatched: state.watchExpirationMs === undefined };
}

// Exit 1 when the mailbox needs the operator: a consent, or no watch (no push arrives).
function exitOf(state: MailboxState, watch: { expired: boolean; unwatched: boolean }): number {
  return state.needsConsent || watch.expired || watch.unwatched ? 1 : 0;
}

function printJson(state: MailboxState, pending: number, out: (line: string) => void): number {
  const watch = watchOf(state, Date.now());
  out(
    jsonLine({
      ...state,
      pendingPushes: pending,
      watchExpired: watch.expired,
      unwatched: watch.unwatched,
    }),
  );
  return exitOf(state, watch);
}

function printText(state: MailboxState, pending: number, out: (line: string) => void): number {
  const watch = watchOf(state, Date.now());
  out(terminalText(`mailbox: ${state.account}`));
  out(
    watch.unwatched
      ? 'watch expires: no watch yet (NO PUSHES ARRIVE)'
      : `watch expires: ${when(state.watchExpirationMs)}${watch.expired ? ' (EXPIRED: no pushes arrive)' : ''}`,
  );
  if (state.watchError !== undefined)
    out(terminalText(`last watch attempt failed: ${state.watchError}`));
  out(`watch renewed: ${when(state.watchedAtMs)}`);
  out(`cursor (history id): ${state.cursor ?? 'none yet'}`);
  out(`last push: ${when(state.lastPushAtMs)}; pushes waiting for a sync: ${pending}`);
  // A sync that finished records its time as the last good sync too; one that did not says so.
  const unfinished =
    state.lastSyncAtMs !== undefined && state.lastSuccessAtMs !== state.lastSyncAtMs
      ? ` (did not finish; last finished sync: ${when(state.lastSuccessAtMs)})`
      : '';
  out(`last sync: ${when(state.lastSyncAtMs)}${unfinished}`);
  out(terminalText(`last error: ${state.lastError ?? 'none'}`));
  if (state.needsConsent) out(`NEEDS CONSENT: run hookgate gmail setup --account ${state.account}`);
  return exitOf(state, watch);
}

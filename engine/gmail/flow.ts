/**
 * The mail-notification flow, assembled when `hooks.gmail.account` is set:
 * the push listener (its own port, `hooks.gmail.serve`), the mailbox store,
 * the Gmail API behind an OAuth token source, the sync job that turns new
 * mail into the gmail preset's actions, and the minute tick that keeps the
 * watch alive. Configuration that cannot work is a ConfigError at boot.
 */
import type { LoadedConfig } from '../config.ts';
import { ConfigError } from '../config.ts';
import type { Ledger } from '../dispatcher.ts';
import type { RouteTable } from '../ingress/routes.ts';
import type { Logger } from '../log.ts';
import type { KeepKeys } from '../queue/action-store.ts';
import { createEmitter, createRanCheck, type HeldRoutes, MESSAGE_KEY_PREFIX } from './emit.ts';
import { pushIsNew } from './history-id.ts';
import { MAIL_FIELDS_MAX_BYTES } from './message-text.ts';
import { createMailSource } from './mail-source.ts';
import { type MailboxState, openMailboxStore } from './mailbox-store.ts';
import { checkSecretUrls, createMailboxClient } from './mailbox-client.ts';
import { createPushAuthenticator } from './push-auth.ts';
import { decodePush } from './push-envelope.ts';
import { startPushServer } from './push-server.ts';
import { retryWaitMs } from './retry-wait.ts';
import {
  createMailboxSync,
  ledgerFloorMs,
  type MailboxSync,
  markNeedsConsent,
  type SyncOutcome,
} from './sync.ts';
import { readRefreshToken } from './token-file.ts';
import { startUpkeep } from './upkeep.ts';

export type MailFlow = {
  pushUrl: string;
  sync: MailboxSync;
  /** The watched mailbox as the store has it (watch expiry, consent). */
  state(): MailboxState;
  /** How many recorded pushes wait for a sync. */
  pendingPushes(): number;
  /** The message keys the store's prune must keep longer: those the fallback may read again. */
  keepKeys(): KeepKeys | undefined;
  close(): Promise<void>;
};

export type MailFlowDeps = {
  routes: RouteTable;
  /** The current routes held for one message (default: `routes`, never released early). */
  holdRoutes?: () => HeldRoutes;
  ledger: Ledger;
  logger: Logger;
  /** Tell the owner, as a main-session event. */
  notify: (text: string) => void;
};

const CALL_TIMEOUT_MS = 20_000;
const TOPIC = /^projects\/[a-z][a-z0-9-]{4,28}[a-z0-9]\/topics\/[A-Za-z][\w.~+%-]{2,254}$/;

/** A setting the flow cannot work without, but the service can start without (warned). */
export type MailFlowProblem = { path: string; message: string };

/**
 * The flow's settings, checked. What breaks the service is a ConfigError (the push check, the
 * gmail preset); what only stops the mailbox (no OAuth client, a short topic) is a problem the
 * server warns about and `hookgate check` refuses, as for runner commands.
 */
export function checkMailFlow(loaded: LoadedConfig, routes: RouteTable) {
  const gmail = loaded.config.hooks.gmail;
  if (routes.find('gmail').name !== 'gmail') {
    throw new ConfigError(
      'hooks.presets',
      'the mail flow turns mail into actions with the gmail preset: add gmail',
    );
  }
  const authenticator = createPushAuthenticator(
    { push: gmail.push, pushToken: gmail.pushToken },
    { at: 'hooks.gmail' },
  );
  checkSecretUrls(gmail);
  const problems: MailFlowProblem[] = [...bodyBudgetProblems(loaded.config.hooks)];
  if (!gmail.oauth.clientId) {
    problems.push({
      path: 'hooks.gmail.oauth.clientId',
      message:
        'no OAuth client: pushes are recorded, but the mailbox cannot be read until one is set',
    });
  }
  const account = gmail.account as string;
  if (!gmail.oauth.refreshToken && !readRefreshToken(loaded.dataDir, account)) {
    problems.push({
      path: 'hooks.gmail.oauth.refreshToken',
      message: `no refresh token for ${account}: run hookgate gmail setup (the consent) or set one`,
    });
  }
  if (!TOPIC.test(gmail.topic)) {
    problems.push({
      path: 'hooks.gmail.topic',
      message:
        'the watch needs the full name projects/<project>/topics/<topic> (setup --project writes it)',
    });
  }
  return { clientId: gmail.oauth.clientId ?? '', authenticator, problems };
}

// The preset's own text around the fields (`New email from`, `Subject:`, line breaks), with room.
const PRESET_TEXT_BYTES = 256;

/**
 * A body cut at hooks.gmail.maxBytes should fit, with the sender, subject and snippet, in what a
 * mapping may render (hooks.maxRenderedFieldBytes, .maxRenderedActionBytes, .maxRenderedRequestBytes):
 * past it, every long mail is refused as rendered_too_large and skipped (said in `gmail status`),
 * where a body cut at maxBytes was meant.
 */
function bodyBudgetProblems(hooks: LoadedConfig['config']['hooks']): MailFlowProblem[] {
  const gmail = hooks.gmail;
  if (!gmail.includeBody) return [];
  const bound = Math.min(
    hooks.maxRenderedFieldBytes,
    hooks.maxRenderedActionBytes,
    hooks.maxRenderedRequestBytes,
  );
  const room = bound - MAIL_FIELDS_MAX_BYTES - PRESET_TEXT_BYTES;
  if (gmail.maxBytes <= room) return [];
  return [
    {
      path: 'hooks.gmail.maxBytes',
      message: `a body of ${gmail.maxBytes} bytes with its sender, subject and snippet renders past hooks.maxRendered*Bytes (${bound}), so long mail is skipped, not cut: at most ${room} with these bounds (or raise them)`,
    },
  ];
}

/** Start the flow, or undefined when no mailbox is configured. */
export async function startMailFlow(
  loaded: LoadedConfig,
  deps: MailFlowDeps,
): Promise<MailFlow | undefined> {
  const { hooks } = loaded.config;
  const gmail = hooks.gmail;
  const account = gmail.account;
  if (!hooks.enabled || account === undefined) return undefined;
  const { authenticator, problems } = checkMailFlow(loaded, deps.routes);
  for (const problem of problems) deps.logger.warn({ path: problem.path }, problem.message);
  const store = openMailboxStore(loaded.dataDir);
  const { api, tokenHash } = createMailboxClient(loaded, account, CALL_TIMEOUT_MS);
  const emitterDeps = {
    routes: deps.holdRoutes ?? (() => ({ routes: deps.routes, hooks, release: () => undefined })),
    ledger: deps.ledger,
    keptSinceMs: () => ledgerFloorMs(store.state(account).lastSuccessAtMs),
  };
  const sync = createMailboxSync({
    account,
    store,
    source: createMailSource(api, gmail),
    emit: createEmitter(emitterDeps),
    ran: createRanCheck(emitterDeps),
    notify: deps.notify,
    tokenHash,
    logger: deps.logger,
  });
  const retry = retrying(sync, deps.logger);
  const push = await startPushServer(
    { ...gmail.serve, timeoutMs: CALL_TIMEOUT_MS, caps: loaded.config.server },
    {
      account,
      authenticate: (credentials) => authenticator.authenticate(credentials),
      challenge: authenticator.challenge,
      decode: decodePush,
      record: (recorded) => store.recordPush(recorded, Date.now()),
      onRecorded: (recorded) => {
        // A push at or behind the cursor (a captured one replayed with fresh message ids, a late
        // one) holds nothing a sync has not read: covered now, with no Gmail call for it.
        if (pushIsNew(recorded.historyId, store.state(account).cursor)) retry.now();
        else store.markSynced([recorded.messageId], Date.now());
      },
      logger: deps.logger,
    },
  );
  const upkeep = startUpkeep({
    account,
    renewEveryMinutes: gmail.renewEveryMinutes,
    store,
    watch: async () => {
      const result = await api.watch({ topicName: gmail.topic, labelIds: [gmail.label] });
      if (result.kind === 'ok') return result;
      if (result.kind === 'needs_consent') return result;
      return {
        kind: 'failed',
        reason: 'reason' in result ? result.reason : result.kind,
      };
    },
    sync: () => retry.now(),
    onNeedsConsent: () =>
      markNeedsConsent({ account, store, logger: deps.logger, notify: deps.notify, tokenHash }),
    logger: deps.logger,
  });
  // At start: renew the watch if due, then pick up pushes recorded before a stop or a crash.
  void upkeep.tick().then(() => retry.now());
  process.stdout.write(`gmail push listening on ${push.url}\n`);
  deps.logger.info({ url: push.url, account }, `gmail push listening on ${push.url}`);
  return {
    pushUrl: push.url,
    state: () => store.state(account),
    pendingPushes: () => store.pendingCount(account),
    keepKeys: () => {
      const sinceMs = ledgerFloorMs(store.state(account).lastSuccessAtMs);
      return sinceMs === undefined ? undefined : { prefix: MESSAGE_KEY_PREFIX, sinceMs };
    },
    sync,
    async close() {
      retry.stop();
      sync.stop();
      await upkeep.stop();
      await push.close();
      // A sync in progress stops after its message (its commit is awaited); the store closes last.
      await sync.idle();
      store.close();
    },
  };
}

// A sync that could not finish is tried again: after the rate limit's wait, or after this.
const RETRY_FAILED_MS = 5 * 60 * 1000;
// What a later try can cure (a refused consent waits for a new token; a stop is a stop).
const RETRIED: ReadonlySet<string> = new Set(['backoff', 'failed', 'cursor_expired']);

/** Run the sync now; when it could not finish, once more later (never at once: retry-wait.ts). */
function retrying(sync: MailboxSync, logger: Logger) {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  // Syncs in a row that did not finish; callers sharing one sync share its outcome, counted once.
  let failures = 0;
  // Syncs in a row that left a push past the history Gmail answered (its history lagging).
  let behind = 0;
  let counted: SyncOutcome | undefined;
  const later = (wait: number) => {
    clearTimeout(timer);
    timer = setTimeout(() => void now(), wait);
    timer.unref();
  };
  const now = (): Promise<void> =>
    sync.request().then(
      (outcome) => {
        if (outcome.kind === 'synced') {
          failures = 0;
          if (!outcome.ahead) behind = 0;
          // Gmail's history behind a push: read again soon, the wait doubling from a second to
          // 64 (sync.ts marks such a push covered after the safety net's hour).
          if (stopped || !outcome.ahead) return;
          if (outcome !== counted) behind++;
          counted = outcome;
          later(retryWaitMs(0, behind));
          return;
        }
        if (stopped || outcome.kind !== 'waiting' || !RETRIED.has(outcome.reason)) return;
        if (outcome !== counted) failures++;
        counted = outcome;
        later(retryWaitMs(outcome.retryAfterMs ?? RETRY_FAILED_MS, failures));
      },
      (err: unknown) => logger.error({ err: (err as Error).message }, 'gmail sync failed'),
    );
  return {
    now,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

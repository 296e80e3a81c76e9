/**
 * Helpers for end-to-end tests of the mail flow in the real `server.ts`
 * process: a config file pointing the flow at the Gmail and key-set
 * stand-ins, the service started and both of its addresses read from what it
 * printed, Pub/Sub push envelopes, and what a user sees afterwards (the
 * stored gmail actions, `hookgate gmail status --json`). The tests that run
 * the mail flow in-process share its settings, stand-ins and pushes from here.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { TestServer } from './hookgate.ts';
import {
  type GmailStandIn,
  gmailSettings,
  PUSH_PATH,
  startGmailStandIn,
} from './gmail-stand-in.ts';
import {
  AUDIENCE,
  type KeyServer,
  makeKey,
  SERVICE_ACCOUNT,
  type SigningKey,
  startKeyServer,
} from './jwks-stand-in.ts';
import {
  type HookgateProcess,
  killAll,
  listStoredActions,
  runHookgate,
  spawnHookgate,
  writeConfig,
} from './process.ts';
import { until } from './signed-http.ts';

export const ACCOUNT = 'me@example.com';
export const HOOK_TOKEN = 'gmail-e2e-hook-token-0123456789';

/** `gmail setup` of ACCOUNT into the file `config`: project, topic, push endpoint (OIDC), no consent. */
export const setupArgs = (config: string) => [
  ...['gmail', 'setup', '--config', config, '--account', ACCOUNT],
  ...['--project', 'my-project-1', '--project-number', '123456', '--topic', 'gmail-watch'],
  ...['--push-endpoint', 'https://hooks.example.com/gmail-pubsub'],
  ...['--client-id', 'client-1.apps.googleusercontent.com', '--no-consent'],
];

/** The main listener's own line (the push listener's line also says "listening on"). */
const MAIN_LISTENING = /hookgate listening on (http:\/\/127\.0\.0\.1:\d+)/;
const PUSH_LISTENING = /gmail push listening on (http:\/\/127\.0\.0\.1:\d+)/;

/** `hooks` settings: the gmail preset, the mail flow for ACCOUNT on the stand-in with `settings`. */
export function mailHooks(gmail: GmailStandIn, settings: Record<string, unknown>) {
  return { presets: ['gmail'], gmail: gmailSettings(gmail, ACCOUNT, settings) };
}

/** A config file in `dir` (data in ./data) with the mail flow on the stand-in; `push` as given. */
export function gmailConfigFile(
  dir: string,
  gmail: GmailStandIn,
  push: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): { file: string; dataDir: string } {
  // JSON is YAML: the settings are written as an object, not as hand-indented text.
  const config = {
    server: { host: '127.0.0.1', port: 0 },
    runtime: { dataDir: './data' },
    log: { level: 'info' },
    hooks: { enabled: true, token: HOOK_TOKEN, ...mailHooks(gmail, { push, ...extra }) },
  };
  const file = writeConfig(dir, JSON.stringify(config, null, 2));
  return { file, dataDir: path.join(dir, 'data') };
}

export type GmailService = HookgateProcess & { url: string; pushUrl: string };

/** Start `serve --config file`; resolves once both listeners printed their address. */
export async function startGmailService(file: string): Promise<GmailService> {
  const proc = spawnHookgate(['serve', '--config', file]);
  try {
    const push = await proc.waitForStdout(PUSH_LISTENING);
    const main = await proc.waitForStdout(MAIN_LISTENING);
    return { ...proc, url: main[1] as string, pushUrl: `${push[1]}${PUSH_PATH}` };
  } catch (err) {
    proc.child.kill('SIGKILL');
    throw err;
  }
}

/** A Pub/Sub push envelope carrying Gmail's notification `data` (base64 JSON by default). */
export function envelope(
  messageId: string,
  historyId: string,
  options: { emailAddress?: string; data?: string } = {},
) {
  const notification = { emailAddress: options.emailAddress ?? ACCOUNT, historyId };
  const data = options.data ?? Buffer.from(JSON.stringify(notification)).toString('base64');
  return {
    message: { data, messageId, publishTime: new Date().toISOString() },
    subscription: 'projects/my-project/subscriptions/gmail-watch-push',
  };
}

/** POST an envelope to an in-process server's push listener with these headers; the status. */
export async function pushTo(
  server: Pick<TestServer, 'mail'> | undefined,
  messageId: string,
  historyId: string,
  headers: Record<string, string>,
): Promise<number> {
  const res = await fetch(`${server?.mail?.pushUrl}${PUSH_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(envelope(messageId, historyId)),
  });
  return res.status;
}

/** An in-process server's start-up syncs have ended (later Gmail calls are the test's own). */
export async function startupSynced(server: Pick<TestServer, 'mail'>): Promise<void> {
  await until('the first sync', () => server.mail?.state().lastSuccessAtMs !== undefined);
  await server.mail?.sync.idle();
}

/** POST an envelope (or a raw string, sent as is) to `url` with these headers; the status. */
export async function sendPush(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<number> {
  return (await sendPushAnswer(url, body, headers)).status;
}

/** As sendPush, with the answer's challenge (its WWW-Authenticate, null without one). */
export async function sendPushAnswer(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; challenge: string | null }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  await res.arrayBuffer();
  return { status: res.status, challenge: res.headers.get('www-authenticate') };
}

/** The gmail actions `hookgate actions --json` lists for the data directory. */
export async function gmailActions(dataDir: string): Promise<Array<Record<string, unknown>>> {
  const actions = await listStoredActions(['--data-dir', dataDir]);
  return actions.filter((action) => action['hook'] === 'gmail');
}

/** The Gmail message ids the stored gmail actions were made from, sorted. */
export async function actionMessageIds(dataDir: string): Promise<string[]> {
  const actions = await gmailActions(dataDir);
  return actions
    .map((action) => (action['verification'] as { deliveryId?: string } | undefined)?.deliveryId)
    .map(String)
    .sort();
}

export type MailboxStatus = {
  cursor?: string;
  lastError?: string;
  watchError?: string;
  watchExpirationMs?: number;
  unwatched?: boolean;
  lastPushAtMs?: number;
  pendingPushes: number;
  needsConsent: boolean;
};

/** `hookgate gmail status --json --config file`, parsed, with its exit code. */
export async function gmailStatus(file: string): Promise<MailboxStatus & { code: number | null }> {
  const result = await runHookgate(['gmail', 'status', '--json', '--config', file]);
  if (result.stderr !== '') throw new Error(`gmail status: ${result.stderr}`);
  return { ...(JSON.parse(result.stdout) as MailboxStatus), code: result.code };
}

/** How many users.history.list calls the stand-in saw. */
export const historyCalls = (gmail: GmailStandIn) =>
  gmail.calls.filter((call) => call.path.endsWith('/history')).length;

/**
 * The mailbox's state and the stored mail ids read from the store file directly: what
 * `gmail status` and `actions --json` print, without a process each (for tests that ask often).
 */
export function storedMailState(dataDir: string): {
  pendingPushes: number;
  lastPushAtMs: number | undefined;
  cursor: string | undefined;
  mailIds: string[];
} {
  const db = new DatabaseSync(path.join(dataDir, 'hookgate.db'), {
    readOnly: true,
    timeout: 10_000,
  });
  try {
    const mailbox = db
      .prepare('SELECT cursor, last_push_at_ms FROM gmail_mailboxes WHERE account = ?')
      .get(ACCOUNT) as { cursor: string | null; last_push_at_ms: number | null } | undefined;
    const pending = db
      .prepare('SELECT count(*) AS n FROM gmail_pushes WHERE synced_at_ms IS NULL')
      .get() as { n: number };
    const rows = db.prepare("SELECT action FROM actions WHERE hook = 'gmail'").all() as Array<{
      action: string;
    }>;
    const mailIds = rows
      .map(
        (row) =>
          (JSON.parse(row.action) as { verification?: { deliveryId?: string } }).verification
            ?.deliveryId,
      )
      .map(String)
      .sort();
    return {
      pendingPushes: Number(pending.n),
      lastPushAtMs: mailbox?.last_push_at_ms ?? undefined,
      cursor: mailbox?.cursor ?? undefined,
      mailIds,
    };
  } finally {
    db.close();
  }
}

/** The stand-ins an OIDC push needs: Gmail, a key server with one key, the push settings. */
export type OidcStandIns = {
  gmail: GmailStandIn;
  keys: KeyServer;
  key: SigningKey;
  /** `hooks.gmail.push` trusting tokens `key` signs. */
  push: Record<string, unknown>;
  /** Close the stand-ins. */
  close(): Promise<void>;
};

/** Start a Gmail stand-in and a key server serving one signing key. */
export async function startOidcStandIns(): Promise<OidcStandIns> {
  const gmail = await startGmailStandIn();
  const key = await makeKey('k1');
  const keys = await startKeyServer([key]);
  const push = {
    mode: 'oidc',
    audience: AUDIENCE,
    serviceAccountEmail: SERVICE_ACCOUNT,
    jwksUrl: keys.url,
  };
  return {
    gmail,
    keys,
    key,
    push,
    async close() {
      await gmail.close();
      await keys.close();
    },
  };
}

/** The stand-ins an OIDC mail-flow test needs, and its config file. */
export type OidcWorld = Omit<OidcStandIns, 'push' | 'close'> & {
  file: string;
  dataDir: string;
  /** Kill every service started, close the stand-ins. */
  close(): Promise<void>;
};

/** Start a Gmail stand-in and a key server, and write an OIDC-mode config into `dir`. */
export async function startOidcWorld(
  dir: string,
  extra: Record<string, unknown> = {},
): Promise<OidcWorld> {
  const standIns = await startOidcStandIns();
  const { gmail, keys, key } = standIns;
  const { file, dataDir } = gmailConfigFile(dir, gmail, standIns.push, extra);
  return {
    gmail,
    keys,
    key,
    file,
    dataDir,
    async close() {
      await killAll();
      await standIns.close();
    },
  };
}

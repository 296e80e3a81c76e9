/**
 * The Pub/Sub push listener of the mail flow (`hooks.gmail.serve`): a
 * listener of its own, so Pub/Sub's URL secret (`?token=`) is accepted here
 * and nowhere under the hook path. A push is authenticated, decoded, recorded
 * durably, then acknowledged (204) well inside Pub/Sub's ack deadline; the
 * mailbox is synced afterwards, by the sync job. A push that can never be
 * processed (garbage, another mailbox) is logged and acknowledged: a NACK
 * would make Pub/Sub back off the whole subscription. Only a push that could
 * not be recorded is refused (503), so that Pub/Sub sends it again.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseJsonObject, readBody } from '../body.ts';
import { capConnections, type ListenerCaps } from '../connection-limit.ts';
import { HookError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { sendEmpty, sendError } from '../respond.ts';
import type { RecordedPush } from './mailbox-store.ts';
import type { PushAuthResult, PushCredentials } from './push-auth.ts';
import type { PushEnvelopeResult } from './push-envelope.ts';

export type PushServerDeps = {
  account: string;
  authenticate: (credentials: PushCredentials) => Promise<PushAuthResult>;
  /** The WWW-Authenticate every 401 carries (the authenticator's). */
  challenge: string;
  decode: (body: unknown) => PushEnvelopeResult;
  /** Record durably; false for a push recorded before. Throws when it cannot be stored. */
  record: (push: RecordedPush) => boolean;
  /** A new push was recorded (up to `historyId`): sync soon, if it can hold new mail. */
  onRecorded: (push: RecordedPush) => void;
  logger: Logger;
};

export type PushServerSettings = {
  bind: string;
  port: number;
  path: string;
  timeoutMs: number;
  /** The connection caps, as the hook listener's (`server`): Pub/Sub reaches it unauthenticated. */
  caps: ListenerCaps;
};

// A Gmail push is well under 1 KB; this bounds what an unauthenticated caller can make us read.
const MAX_BODY_BYTES = 65_536;
const MAX_DEPTH = 16;

// Refusals as the hook listener writes them (`{"ok":false,"error":{"code","message"}}`), built once.
const NOT_FOUND = new HookError('not_found', 'No such endpoint: pushes go to the configured path.');
// With Allow, as the hook listener's 405 (RFC 9110 asks a 405 to name the methods it takes).
const METHOD_NOT_ALLOWED = new HookError('method_not_allowed', undefined, {
  headers: { allow: 'POST' },
});
const UNAUTHORIZED_MESSAGE =
  "Missing or invalid push credentials (the subscription's OIDC token, or its token).";
const NOT_RECORDED = new HookError(
  'unavailable',
  'The push could not be recorded; Pub/Sub sends it again.',
);
const INTERNAL = new HookError('internal');

export type PushServer = { url: string; server: Server; close(): Promise<void> };

/** Start the push listener; resolves once it listens. */
export async function startPushServer(
  settings: PushServerSettings,
  deps: PushServerDeps,
): Promise<PushServer> {
  // Built once: one refusal whatever was wrong, with the mode's challenge (RFC 9110 asks one).
  const unauthorized = new HookError('unauthorized', UNAUTHORIZED_MESSAGE, {
    headers: { 'www-authenticate': deps.challenge },
  });
  const server = createServer(
    { headersTimeout: settings.timeoutMs, requestTimeout: settings.timeoutMs + 1_000 },
    (req, res) => {
      handle(req, res, settings, deps, unauthorized).catch((err: unknown) => {
        deps.logger.error({ err: (err as Error).message }, 'gmail push failed');
        refuse(res, INTERNAL);
      });
    },
  );
  capConnections(server, settings.caps);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.port, settings.bind, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    server,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  settings: PushServerSettings,
  deps: PushServerDeps,
  unauthorized: HookError,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://push.invalid');
  if (url.pathname !== settings.path) return refuse(res, NOT_FOUND);
  if (req.method !== 'POST') return refuse(res, METHOD_NOT_ALLOWED);
  const token = req.headers['x-gog-token'];
  const check = await deps.authenticate({
    ...(req.headers.authorization !== undefined && { authorization: req.headers.authorization }),
    ...(typeof token === 'string' && { tokenHeader: token }),
    ...(url.searchParams.has('token') && { queryToken: url.searchParams.get('token') as string }),
  });
  if (!check.ok) {
    // A forgery or a misconfigured subscription: refused (Pub/Sub retries), and said in the log.
    deps.logger.warn({ reason: check.reason }, 'gmail push refused');
    return refuse(res, unauthorized, true);
  }
  let body: unknown;
  try {
    body = parseJsonObject(
      await readBody(req, { maxBytes: MAX_BODY_BYTES, timeoutMs: settings.timeoutMs }),
      MAX_DEPTH,
    );
  } catch {
    deps.logger.warn({ reason: 'body' }, 'gmail push ignored: not a JSON push envelope');
    return answer(res, 204, true);
  }
  const decoded = deps.decode(body);
  if (!decoded.ok) {
    deps.logger.warn({ reason: decoded.reason }, 'gmail push ignored');
    return answer(res, 204);
  }
  const { messageId, emailAddress, historyId } = decoded.push;
  if (emailAddress.toLowerCase() !== deps.account.toLowerCase()) {
    deps.logger.warn({ messageId }, 'gmail push ignored: not the watched mailbox');
    return answer(res, 204);
  }
  let added: boolean;
  try {
    added = deps.record({ messageId, account: deps.account, historyId });
  } catch (err) {
    deps.logger.error({ err: (err as Error).message }, 'gmail push not recorded');
    return refuse(res, NOT_RECORDED);
  }
  deps.logger.info({ messageId, historyId, replayed: !added }, 'gmail push');
  if (added) deps.onRecorded({ messageId, account: deps.account, historyId });
  answer(res, 204);
}

/** Acknowledge (204, no body). */
function answer(res: ServerResponse, status: number, close = false): void {
  if (res.headersSent) return;
  sendEmpty(res, status, randomUUID(), close ? ['connection', 'close'] : undefined);
}

/** Refuse with the JSON error body every hookgate listener writes. */
function refuse(res: ServerResponse, error: HookError, close = false): void {
  if (res.headersSent) return;
  sendError(res, error, randomUUID(), close);
}

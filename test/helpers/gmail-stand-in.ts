/**
 * A local stand-in for Google in tests: one HTTP server on 127.0.0.1 (free
 * port) speaking the documented wire formats of the OAuth token endpoint
 * (refresh-token grant) and of the Gmail API calls the mail flow makes
 * (users.watch, users.stop, users.history.list, users.messages.get). Every
 * Gmail call must carry the current access token as its bearer. Tests script
 * failures (`failNext`), raw hostile answers (`answerNext`), an expired
 * history or one without end, a revoked refresh token, and read the log of calls.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMailbox, type MailFixture, renderRecord } from './gmail-mailbox.ts';

/** The path the mail flow's push listener serves in these tests. */
export const PUSH_PATH = '/gmail-pubsub';

/**
 * `hooks.gmail` settings pointing the mail flow for `account` at the stand-in `gmail`, with the
 * push listener on 127.0.0.1 (free port) at PUSH_PATH; `more` (the push mode and any other
 * settings) added as given.
 */
export function gmailSettings(
  gmail: GmailStandIn,
  account: string,
  more: Record<string, unknown>,
): Record<string, unknown> {
  return {
    account,
    topic: 'projects/my-project/topics/gmail-watch',
    oauth: {
      clientId: gmail.clientId,
      clientSecret: gmail.clientSecret,
      refreshToken: gmail.refreshToken,
      tokenUrl: gmail.tokenUrl,
    },
    apiBaseUrl: gmail.apiBaseUrl,
    serve: { bind: '127.0.0.1', port: 0, path: PUSH_PATH },
    ...more,
  };
}

/** The stand-in's client, tokens and history. */
export type GmailStandInOptions = {
  clientId?: string;
  clientSecret?: string;
  refreshToken?: string;
  /** The `expires_in` of granted access tokens, seconds. */
  expiresIn?: number;
  startHistoryId?: bigint;
  /** Most history records per page, below Gmail's own 500. */
  historyPageSize?: number;
};

/** One Gmail API call as the stand-in saw it. */
export type GmailCall = {
  method: string;
  /** The path without the query. */
  path: string;
  query: URLSearchParams;
  /** Whether the bearer was the current access token. */
  authorized: boolean;
  /** When it arrived (epoch ms). */
  at: number;
};

/** A raw answer sent as is; `stream` sends `chunk` `count` times (or until the client leaves). */
export type RawReply = {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  stream?: { chunk: string; count: number };
  /** Answer only after this long (a slow endpoint). */
  delayMs?: number;
};

type Route = 'token' | 'gmail';

// Google's error JSON for a status, with the reason Gmail's error guide pairs with it.
const GOOGLE_ERRORS: Record<number, [string, string]> = {
  400: ['badRequest', 'INVALID_ARGUMENT'],
  401: ['authError', 'UNAUTHENTICATED'],
  403: ['forbidden', 'PERMISSION_DENIED'],
  404: ['notFound', 'NOT_FOUND'],
  429: ['rateLimitExceeded', 'RESOURCE_EXHAUSTED'],
  500: ['backendError', 'INTERNAL'],
  503: ['backendError', 'UNAVAILABLE'],
};

/** Google's error body for `status` (and `reason`, else the usual one). */
export function googleError(status: number, reason?: string): string {
  const [usual, state] = GOOGLE_ERRORS[status] ?? ['unknown', 'UNKNOWN'];
  const why = reason ?? usual;
  return JSON.stringify({
    error: {
      code: status,
      message: `stand-in ${why}`,
      errors: [{ domain: 'global', reason: why, message: `stand-in ${why}` }],
      status: state,
    },
  });
}

/** A running stand-in and its controls. */
export type GmailStandIn = Awaited<ReturnType<typeof startGmailStandIn>>;

/** Start the stand-in; its token endpoint is `tokenUrl`, its Gmail address `apiBaseUrl`. */
export async function startGmailStandIn(options: GmailStandInOptions = {}) {
  const client = {
    clientId: options.clientId ?? 'stand-in-client.apps.example',
    clientSecret: options.clientSecret ?? 'stand-in-client-secret',
    refreshToken: options.refreshToken ?? '1//stand-in-refresh-token',
  };
  const mailbox = createMailbox(options.startHistoryId);
  const scripted: Record<Route, RawReply[]> = { token: [], gmail: [] };
  const state = {
    accessToken: undefined as string | undefined,
    refreshes: 0,
    revoked: false,
    stops: 0,
    /** history.list answers an empty page with a next page for ever (the same token, or new ones). */
    endless: undefined as 'same' | 'fresh' | undefined,
    endlessPages: 0,
    /** history.list answers as of this history id (Gmail's history lagging its pushes). */
    heldAt: undefined as bigint | undefined,
  };
  const calls: GmailCall[] = [];
  const tokenForms: URLSearchParams[] = [];
  const tokenTimes: number[] = [];
  const watches: unknown[] = [];
  const watchExpirations: number[] = [];

  const grant = (form: URLSearchParams): RawReply => {
    tokenForms.push(form);
    if (
      form.get('client_id') !== client.clientId ||
      form.get('client_secret') !== client.clientSecret
    )
      return json(401, { error: 'invalid_client', error_description: 'Unauthorized' });
    if (form.get('grant_type') !== 'refresh_token')
      return json(400, { error: 'unsupported_grant_type' });
    if (state.revoked || form.get('refresh_token') !== client.refreshToken)
      return json(400, {
        error: 'invalid_grant',
        error_description: 'Token has been expired or revoked.',
      });
    state.refreshes++;
    state.accessToken = `ya29.stand-in-${state.refreshes}`;
    return json(200, {
      access_token: state.accessToken,
      expires_in: options.expiresIn ?? 3599,
      scope: 'https://www.googleapis.com/auth/gmail.readonly',
      token_type: 'Bearer',
    });
  };

  const gmail = (req: IncomingMessage, call: GmailCall, raw: string): RawReply => {
    const match =
      /^\/gmail\/v1\/users\/([^/]+)\/(watch|stop|history|profile|messages|messages\/([^/]+))$/.exec(
        call.path,
      );
    if (!match) return { status: 404, body: googleError(404) };
    const [, , op, messageId] = match;
    if (op === 'watch' && req.method === 'POST') {
      watches.push(raw ? JSON.parse(raw) : undefined);
      // As Gmail does: seven days from now. A fixed date lapses, and then every upkeep
      // tick renews the watch, taking scripted answers meant for a sync.
      const expiration = Date.now() + 7 * 86_400_000;
      watchExpirations.push(expiration);
      return json(200, { historyId: String(mailbox.historyId()), expiration: String(expiration) });
    }
    if (op === 'stop' && req.method === 'POST') {
      state.stops++;
      return { status: 204 };
    }
    if (op === 'history' && req.method === 'GET') return history(call.query);
    if (op === 'profile' && req.method === 'GET') {
      return json(200, { emailAddress: 'me@example.com', historyId: String(mailbox.historyId()) });
    }
    if (op === 'messages' && req.method === 'GET') {
      const max = Number(call.query.get('maxResults') ?? 100);
      const ids = mailbox.newest(call.query.get('labelIds') ?? undefined, max);
      return json(200, { messages: ids.map((id) => ({ id, threadId: id })) });
    }
    if (messageId !== undefined && req.method === 'GET') {
      const format = call.query.get('format') ?? 'full';
      const message = mailbox.render(
        decodeURIComponent(messageId),
        format,
        call.query.getAll('metadataHeaders'),
      );
      return message ? json(200, message) : { status: 404, body: googleError(404) };
    }
    return { status: 405, body: googleError(400) };
  };

  const history = (query: URLSearchParams): RawReply => {
    if (state.endless) {
      state.endlessPages++;
      const token = state.endless === 'same' ? 'again' : `page-${state.endlessPages}`;
      return json(200, { historyId: String(mailbox.historyId()), nextPageToken: token });
    }
    const startText = query.get('startHistoryId') ?? '';
    if (!/^\d+$/.test(startText)) return { status: 400, body: googleError(400, 'invalidArgument') };
    const start = BigInt(startText);
    if (mailbox.isExpired(start)) return { status: 404, body: googleError(404) };
    const size = Math.min(Number(query.get('maxResults') ?? 100), options.historyPageSize ?? 500);
    const offset = Number(Buffer.from(query.get('pageToken') ?? '', 'base64url').toString() || 0);
    const top = state.heldAt ?? mailbox.historyId();
    const records = mailbox
      .recordsAfter(start, query.get('labelId') ?? undefined)
      .filter((r) => r.id <= top);
    const page = records.slice(offset, offset + size);
    const more = offset + size < records.length;
    return json(200, {
      ...(page.length > 0 && { history: page.map(renderRecord) }),
      ...(more && { nextPageToken: Buffer.from(String(offset + size)).toString('base64url') }),
      historyId: String(top),
    });
  };

  const handle = (req: IncomingMessage, res: ServerResponse, raw: string) => {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const route: Route = url.pathname === '/token' ? 'token' : 'gmail';
    if (route === 'gmail') {
      const authorized =
        !!state.accessToken && req.headers.authorization === `Bearer ${state.accessToken}`;
      const call = {
        method: req.method ?? '',
        path: url.pathname,
        query: url.searchParams,
        authorized,
        at: Date.now(),
      };
      calls.push(call);
      // The bearer is checked first, as Google does: no scripted answer without a valid token.
      if (!authorized) return send(res, { status: 401, body: googleError(401) });
      const next = scripted.gmail.shift();
      return send(res, next ?? gmail(req, call, raw));
    }
    tokenTimes.push(Date.now());
    const next = scripted.token.shift();
    if (next) {
      tokenForms.push(new URLSearchParams(raw));
      return send(res, next);
    }
    return send(res, grant(new URLSearchParams(raw)));
  };

  const server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      raw += chunk;
    });
    req.on('end', () => handle(req, res, raw));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    ...client,
    tokenUrl: `${base}/token`,
    apiBaseUrl: base,
    /** Every Gmail API call, in order. */
    calls,
    /** Every token request's form, in order. */
    tokenForms,
    /** When each token request arrived (epoch ms), in order. */
    tokenTimes,
    /** The bodies of users.watch calls. */
    watches,
    /** The expiry (ms) each users.watch answer gave, in order. */
    watchExpirations,
    /** How many access tokens were granted. */
    refreshes: () => state.refreshes,
    stops: () => state.stops,
    currentAccessToken: () => state.accessToken,
    historyId: () => String(mailbox.historyId()),
    addMessage: (fixture: MailFixture) => mailbox.addMessage(fixture),
    deleteMessage: (id: string) => mailbox.deleteMessage(id),
    /** Start ids older than the current history id answer 404 from now on. */
    expireHistory: () => mailbox.expireHistory(),
    /** The refresh token is refused with invalid_grant from now on. */
    revokeRefreshToken: () => {
      state.revoked = true;
    },
    /** history.list never ends: every page is empty and names a next one (`same` token or new ones). */
    endlessHistory(kind: 'same' | 'fresh' | undefined) {
      state.endless = kind;
    },
    /**
     * history.list lags: it answers as of the current history id (neither the records nor the
     * history id of mail added later) until `releaseHistory`, as Gmail's history can lag a push.
     */
    holdHistory: () => {
      state.heldAt = mailbox.historyId();
    },
    releaseHistory: () => {
      state.heldAt = undefined;
    },
    /** The current access token stops being valid (Gmail answers 401). */
    rotateAccessToken: () => {
      state.accessToken = `${state.accessToken ?? 'none'}-revoked`;
    },
    /** The next `times` authorized Gmail calls answer `status` with Google's error JSON. */
    failNext(status: number, times = 1, extra: { retryAfter?: string; reason?: string } = {}) {
      const headers = extra.retryAfter ? { 'retry-after': extra.retryAfter } : undefined;
      const reply = {
        status,
        body: googleError(status, extra.reason),
        ...(headers && { headers }),
      };
      for (let i = 0; i < times; i++) scripted.gmail.push(reply);
    },
    /** The next call to `route` gets this raw answer. */
    answerNext(reply: RawReply, route: Route = 'gmail') {
      scripted[route].push(reply);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function json(status: number, body: unknown): RawReply {
  return { status, body: JSON.stringify(body) };
}

function send(res: ServerResponse, reply: RawReply): void {
  if (reply.delayMs) {
    setTimeout(() => send(res, { ...reply, delayMs: 0 }), reply.delayMs);
    return;
  }
  res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
  if (!reply.stream) {
    res.end(reply.body ?? '');
    return;
  }
  const { chunk, count } = reply.stream;
  let sent = 0;
  // Writes while the client reads; stops when it leaves (the byte cap aborts the request).
  const pump = () => {
    while (sent < count && !res.destroyed) {
      sent++;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
    res.end();
  };
  res.on('close', () => {
    sent = count;
  });
  pump();
}

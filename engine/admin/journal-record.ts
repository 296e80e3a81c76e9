/**
 * One answered request as the console remembers it: plain data taken from
 * the exchange, every string bounded. Tokens, signatures and secrets are
 * never copied; the body, headers and query only when the operator keeps
 * payloads, and then without any header or query parameter that could carry
 * a credential.
 */
import { paramName } from '../ingress/query-names.ts';
import { clipUnits, headUnits } from '../text-cut.ts';
import type { RequestFinished } from '../observe/events.ts';

export type JournalAction = {
  id: string;
  kind: 'wake' | 'agent';
  sessionKey?: string;
  agentId?: string;
  /** The text as the agent gets it (wrapped unless the mapping trusts it). */
  prompt: string;
  wrapped: boolean;
  /** Injection patterns the safety wrapper found. */
  patterns?: string[];
  /** The prompt was cut to the per-prompt bound, or dropped to keep the total bound. */
  truncated?: boolean;
};

export type KeptPayload = {
  body: Buffer;
  /** The body was longer than the bound and is cut. */
  truncated: boolean;
  headers: Record<string, string>;
  query: string;
};

export type JournalRecord = {
  id: string;
  time: string;
  method: string;
  hook: string;
  /** The route that served it ('' for the catch-all), absent when none was picked. */
  route?: string;
  status: number;
  code?: string;
  /** Its caller was authenticated (RequestFinished): it is held apart from those answered before. */
  authenticated: boolean;
  client: string;
  durationMs: number;
  mappingId?: string;
  trace: Array<{ mappingId: string; outcome: string }>;
  actions: JournalAction[];
  verification?: { scheme: string; deliveryId?: string; secretIndex?: number; retry?: boolean };
  replayed: boolean;
  payload?: KeptPayload;
  /** Payloads are kept, but this request was answered before its body was read (a 401). */
  bodyUnread?: true;
};

export type RecordLimits = {
  keepPayloads: boolean;
  maxBodyBytes: () => number;
  maxPromptChars: number;
  /** The hook credentials in force (config/hook-credentials.ts): a header holding one is dropped. */
  credentials?: () => readonly string[];
};

// Headers that carry credentials: dropped by name, and any name with one of these parts.
const SECRET_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'x-hookgate-token',
  'cookie',
  'set-cookie',
]);
const SECRET_PARTS = ['token', 'secret', 'signature', 'key', 'auth', 'password'];
const MAX_HEADERS = 64;
const NAME_CHARS = 256;
const VALUE_CHARS = 4096;
const MAX_TRACE = 256;
const MAX_ACTIONS = 64;

/** The record of one answered request. Pure. */
export function journalRecord(event: RequestFinished, limits: RecordLimits): JournalRecord {
  const x = event.exchange;
  const verification = x.envelope?.verification ?? x.verification;
  const record: JournalRecord = {
    id: x.id,
    time: new Date(x.arrivedAtMs).toISOString(),
    method: clipUnits(x.source.method, 16),
    hook: clipUnits(x.hook, NAME_CHARS),
    ...(x.route && { route: x.route.name }),
    status: event.status,
    ...(event.code !== undefined && { code: event.code }),
    authenticated: event.authenticated === true,
    client: clipUnits(x.client, NAME_CHARS),
    durationMs: event.durationMs,
    ...(x.selection?.mapping && { mappingId: x.selection.mapping.id }),
    trace: (x.selection?.trace ?? [])
      .slice(0, MAX_TRACE)
      .map(({ mappingId, outcome }) => ({ mappingId, outcome })),
    actions: (x.accepted?.actions ?? []).slice(0, MAX_ACTIONS).map((action) => {
      const text = action.prompt ?? (action.kind === 'agent' ? action.message : action.text);
      const truncated = text.length > limits.maxPromptChars;
      return {
        id: action.id,
        kind: action.kind,
        ...(action.kind === 'agent' && {
          sessionKey: clipUnits(action.sessionKey, NAME_CHARS),
          agentId: action.agentId,
        }),
        prompt: truncated ? headUnits(text, limits.maxPromptChars) : text,
        wrapped: action.prompt !== undefined,
        ...(action.safety && { patterns: action.safety.patterns.slice(0, 32) }),
        ...(truncated && { truncated }),
      };
    }),
    ...(verification && {
      verification: {
        scheme: verification.scheme,
        ...(verification.deliveryId !== undefined && {
          deliveryId: clipUnits(verification.deliveryId, NAME_CHARS),
        }),
        ...(verification.secretIndex !== undefined && { secretIndex: verification.secretIndex }),
        ...(verification.retry !== undefined && { retry: verification.retry }),
      },
    }),
    replayed: event.replayed,
  };
  if (limits.keepPayloads && !x.raw) record.bodyUnread = true;
  if (limits.keepPayloads && x.raw) {
    const hidden = new Set(x.route?.gate.hidden ?? []);
    const maxBodyBytes = limits.maxBodyBytes();
    record.payload = {
      body: Buffer.from(x.raw.subarray(0, maxBodyBytes)),
      truncated: x.raw.length > maxBodyBytes,
      headers: keptHeaders(x.source.headers, hidden, limits.credentials?.() ?? []),
      query: x.queryHoldsToken ? QUERY_WITH_TOKEN : clipUnits(keptQuery(x.query), VALUE_CHARS),
    };
  }
  return record;
}

// Shown for a query that holds the hook token (admit.ts), as a path that holds it is named.
const QUERY_WITH_TOKEN = '(holds the hook token)';

// A value in the form of an HTTP credential: an authentication scheme, then its token.
const CREDENTIAL_VALUE =
  /^\s*(?:bearer|basic|digest|token|apikey|api-key|hoba|negotiate|ntlm|oauth|bot|ssws|sharedaccesssignature|aws4-hmac-sha256|hawk)\s+\S/i;

/**
 * The request's headers without any that could carry a credential, bounded: by its name, by a
 * value in a credential's form, or by a value holding one of `credentials` (a proxy's copy of
 * the hook token, or of a URL holding it, under an ordinary name). Pure.
 */
export function keptHeaders(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  hidden: ReadonlySet<string>,
  credentials: readonly string[] = [],
): Record<string, string> {
  const kept: Record<string, string> = Object.create(null);
  let count = 0;
  for (const [name, value] of Object.entries(headers)) {
    if (count >= MAX_HEADERS) break;
    const lower = name.toLowerCase();
    if (value === undefined || !isSafeHeader(lower, hidden)) continue;
    const text = Array.isArray(value) ? value.join(', ') : value;
    // A credential under an ordinary name (`x-upstream: Bearer ...`, a proxy's copy of it), in
    // any of the header's copies (Node joins them with ", ").
    if (text.split(',').some((part) => CREDENTIAL_VALUE.test(part))) continue;
    if (credentials.some((credential) => text.includes(credential))) continue;
    kept[clipUnits(lower, NAME_CHARS)] = clipUnits(text, VALUE_CHARS);
    count += 1;
  }
  return kept;
}

/**
 * The query string without any parameter whose name could carry a credential (`api_key`,
 * `signature`, `X-Auth`...), read as admit reads names (any case, percent-encoding, `;` too).
 * The rest is kept as sent, so a replay parses to the same values. Pure.
 */
export function keptQuery(query: string): string {
  if (!query) return query;
  return query
    .split('&')
    .filter((pair) =>
      pair.split(';').every((part) => {
        const eq = part.indexOf('=');
        return isSafeName(paramName(eq < 0 ? part : part.slice(0, eq)));
      }),
    )
    .join('&');
}

/** False for a header that may carry a token, a signature or a secret. Pure. */
export function isSafeHeader(lower: string, hidden: ReadonlySet<string>): boolean {
  if (SECRET_HEADERS.has(lower) || hidden.has(lower)) return false;
  return isSafeName(lower);
}

function isSafeName(lower: string): boolean {
  return !SECRET_PARTS.some((part) => lower.includes(part));
}

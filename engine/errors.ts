/**
 * The one catalogue of error codes and the error type that carries them.
 * Every refusal in the pipeline is a HookError; the HTTP layer renders it as
 * `{"ok":false,"error":{"code","message"}}` with the catalogue's status.
 * The README's error table is kept in step with this catalogue by a test.
 */

export const ERRORS = Object.freeze({
  not_found: { status: 404, message: 'No such endpoint.' },
  bad_request: { status: 400, message: 'Malformed HTTP request.' },
  headers_too_large: { status: 431, message: 'The request headers are too large.' },
  invalid_host: {
    status: 400,
    message: 'An HTTP/1.1 request must carry exactly one Host header.',
  },
  unsupported_transfer_encoding: {
    status: 501,
    message: 'Only Transfer-Encoding: chunked is supported.',
    // A coding the caller chose and hookgate does not implement: a 5xx, not a fault of ours.
    callerFault: true,
  },
  expectation_failed: { status: 417, message: 'Only Expect: 100-continue is supported.' },
  http_version_not_supported: {
    status: 505,
    message: 'Only HTTP/1.1 and HTTP/1.0 are served here.',
    callerFault: true,
  },
  method_not_allowed: { status: 405, message: 'Only POST is allowed.' },
  token_in_query: {
    status: 400,
    message:
      'Send the token in the Authorization or x-hookgate-token header, not the query string.',
  },
  token_in_path: {
    status: 400,
    message: 'Send the token in the Authorization or x-hookgate-token header, not the URL path.',
  },
  credentials_in_url: {
    status: 400,
    message:
      'The request target carries credentials (user:password@): send the token in the Authorization or x-hookgate-token header.',
  },
  unauthorized: {
    status: 401,
    message: 'Missing or invalid credentials (the hook token, or the sender signature).',
  },
  verify_token_mismatch: {
    status: 403,
    message: 'The subscription handshake did not present the configured verify token.',
  },
  rate_limited: { status: 429, message: 'Too many failed authentication attempts; retry later.' },
  payload_too_large: {
    status: 413,
    message: 'The request body is larger than hooks.maxBodyBytes.',
  },
  request_timeout: { status: 408, message: 'The request body did not arrive in time.' },
  body_too_fragmented: {
    status: 400,
    message: 'The chunked body came in too many small chunks.',
  },
  invalid_json: { status: 400, message: 'The body must be a UTF-8 JSON object.' },
  invalid_form: {
    status: 400,
    message: 'The form body must be UTF-8 form fields, each name at most once.',
  },
  invalid_query: {
    status: 400,
    message: 'The query string must name each parameter at most once.',
  },
  unsupported_media_type: {
    status: 415,
    message: 'Send Content-Type: application/json (or a form where the endpoint takes one).',
  },
  unsupported_content_encoding: {
    status: 415,
    message: 'Send the body without a Content-Encoding: compressed bodies are not decoded.',
  },
  invalid_payload: { status: 400, message: 'The payload does not match the endpoint schema.' },
  rendered_too_large: {
    status: 400,
    message: 'A mapping rendered more than its byte bound (hooks.maxRendered*Bytes).',
  },
  unknown_hook: { status: 404, message: 'No hook with this name.' },
  agent_not_allowed: { status: 403, message: 'This agent may not be targeted by hooks.' },
  session_key_not_allowed: { status: 403, message: 'This session key is not allowed.' },
  invalid_session_key: { status: 400, message: 'The session key is malformed.' },
  model_not_allowed: { status: 403, message: 'This model is not in the allowed model list.' },
  invalid_channel: { status: 400, message: 'Unknown delivery channel.' },
  invalid_recipient: { status: 400, message: 'The recipient is not valid for this channel.' },
  recipient_not_allowed: {
    status: 403,
    message: 'This recipient is not in hooks.allowedRecipients for its channel.',
  },
  idempotency_conflict: {
    status: 409,
    message: 'This idempotency key was already used with a different request.',
  },
  transform_failed: { status: 500, message: 'The transform failed.' },
  transform_timeout: { status: 500, message: 'The transform did not finish in time.' },
  transform_invalid_output: { status: 500, message: 'The transform returned an invalid action.' },
  unavailable: { status: 503, message: 'The service cannot accept requests right now.' },
  internal: { status: 500, message: 'Internal error.' },
} as const);

export type ErrorCode = keyof typeof ERRORS;

/** A 5xx that is our fault (logged as one), not the caller's (`callerFault` in the catalogue). */
export function isServerFault(error: HookError): boolean {
  return error.status >= 500 && !('callerFault' in ERRORS[error.code]);
}

/** A refusal with a stable code, an HTTP status and a message safe to show a caller. */
export class HookError<Code extends ErrorCode = ErrorCode> extends Error {
  readonly code: Code;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>> | undefined;
  /** Structured facts about the refusal (e.g. the mapping and field), sent with the message. */
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(
    code: Code,
    message?: string,
    options?: {
      cause?: unknown;
      headers?: Record<string, string>;
      details?: Record<string, unknown>;
    },
  ) {
    // An answer to a caller, not a fault: its stack is never logged or sent, and capturing one
    // walks the whole stack on every refusal (a locked-out flood built one per request).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message ?? ERRORS[code].message, { cause: options?.cause });
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.name = 'HookError';
    this.code = code;
    this.status = ERRORS[code].status;
    // Frozen copies, as details: the header list built from them once must not go stale.
    this.headers = options?.headers && Object.freeze({ ...options.headers });
    this.details = options?.details && Object.freeze({ ...options.details });
  }

  private serialised: string | undefined;
  private headerList: readonly string[] | undefined;

  /** The error's own headers as a flat name/value list, built once (as the body is). */
  flatHeaders(): readonly string[] {
    this.headerList ??= Object.freeze(this.headers ? Object.entries(this.headers).flat() : []);
    return this.headerList;
  }

  /** The JSON body a caller receives. */
  toBody(): {
    ok: false;
    error: { code: ErrorCode; message: string; details?: Readonly<Record<string, unknown>> };
  } {
    const { code, message, details } = this;
    return { ok: false, error: { code, message, ...(details !== undefined && { details }) } };
  }

  /** The body as JSON text, serialised once (shared refusals are thrown many times). */
  toJson(): string {
    this.serialised ??= JSON.stringify(this.toBody());
    return this.serialised;
  }
}

/** Narrow unknown throwables to HookError, wrapping the rest as `internal`. */
export function asHookError(err: unknown): HookError {
  return err instanceof HookError ? err : new HookError('internal', undefined, { cause: err });
}

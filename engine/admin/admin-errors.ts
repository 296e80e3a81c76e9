/**
 * The admin listener's error codes. Its callers are operators and the
 * console, not webhook senders, so it has its own small catalogue; the body
 * shape is the hooks listener's `{"ok":false,"error":{"code","message"}}`.
 */
import { ERRORS } from '../errors.ts';

export const ADMIN_ERRORS = Object.freeze({
  // How the request is framed, judged as the hook listener judges it (engine/ingress/framing.ts).
  invalid_host: ERRORS.invalid_host,
  unsupported_transfer_encoding: ERRORS.unsupported_transfer_encoding,
  expectation_failed: ERRORS.expectation_failed,
  http_version_not_supported: ERRORS.http_version_not_supported,
  unsupported_content_encoding: ERRORS.unsupported_content_encoding,
  // What Node's HTTP parser refuses, answered as on the hook listener (engine/respond.ts).
  bad_request: ERRORS.bad_request,
  headers_too_large: ERRORS.headers_too_large,
  unauthorized: { status: 401, message: 'Send the admin token as Authorization: Bearer <token>.' },
  forbidden_host: { status: 403, message: 'The Host header is not a loopback address.' },
  forbidden_origin: { status: 403, message: 'Cross-origin requests are refused.' },
  not_found: { status: 404, message: 'No such endpoint.' },
  method_not_allowed: { status: 405, message: 'This method is not allowed here.' },
  not_retryable: { status: 409, message: 'Only a dead or failed run can be retried.' },
  payload_not_kept: {
    status: 409,
    message: 'This request was not kept (admin.keepPayloads is off, or it dropped out).',
  },
  payload_too_large: { status: 413, message: 'The request body is too large.' },
  request_timeout: { status: 408, message: 'The request body did not arrive in time.' },
  body_too_fragmented: { status: 400, message: 'The chunked body came in too many small chunks.' },
  unsupported_media_type: { status: 415, message: 'Send Content-Type: application/json.' },
  invalid_query: {
    status: 400,
    message: 'A query parameter has a value this endpoint cannot use.',
  },
  invalid_json: { status: 400, message: 'The body must be a JSON object of the expected shape.' },
  runtime_off: { status: 503, message: 'The runtime is off: there are no runs.' },
  too_many_streams: { status: 503, message: 'Too many live streams are open.' },
  internal: { status: 500, message: 'Internal error.' },
} as const);

export type AdminErrorCode = keyof typeof ADMIN_ERRORS;

// Headers a refusal of this code always carries: a 401 names the scheme it wants (RFC 9110 11.6.1).
const CODE_HEADERS: Partial<Record<AdminErrorCode, Readonly<Record<string, string>>>> = {
  unauthorized: { 'www-authenticate': 'Bearer' },
};

/** A refusal of the admin listener, with its status, an optional detail safe to show and headers. */
export class AdminError extends Error {
  readonly code: AdminErrorCode;
  readonly status: number;
  readonly detail: string | undefined;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: AdminErrorCode, detail?: string, headers?: Record<string, string>) {
    super(ADMIN_ERRORS[code].message);
    this.code = code;
    this.status = ADMIN_ERRORS[code].status;
    this.detail = detail;
    this.headers = { ...CODE_HEADERS[code], ...headers };
  }

  /** The JSON body this refusal is answered with. */
  toJson(): string {
    const error: Record<string, string> = { code: this.code, message: this.message };
    if (this.detail !== undefined) error['detail'] = this.detail;
    return JSON.stringify({ ok: false, error });
  }
}

/**
 * What the admit stage refuses in how a request is framed, before its route
 * is known: a Host header missing or repeated on HTTP/1.1, a transfer coding
 * other than chunked, an expectation other than 100-continue. Node's parser
 * answers these itself by default with an empty body, no request id and no
 * request line (and before the path, the lock or the token are looked at);
 * the listener leaves them to this stage instead. Pure decisions.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { HookError } from '../errors.ts';
import { codingsOf } from '../coding-list.ts';
import { expectsContinue } from '../body.ts';

// Built once: a flood of such requests allocates nothing per refusal.
const INVALID_HOST = new HookError('invalid_host');
const UNSUPPORTED_TRANSFER_ENCODING = new HookError('unsupported_transfer_encoding');
const EXPECTATION_FAILED = new HookError('expectation_failed');
const VERSION_NOT_SUPPORTED = new HookError('http_version_not_supported');

/** The parts of a request its framing is judged by. */
export type Framing = {
  /** As sent (`1.1`); absent for a request that came over no HTTP connection (a dry run). */
  httpVersion?: string | undefined;
  headers: IncomingHttpHeaders;
  rawHeaders: readonly string[];
};

/** The refusal of a request's framing, or undefined when it is framed as hookgate reads it. */
export function framingRefusal(
  request: Framing,
):
  | HookError<
      | 'invalid_host'
      | 'unsupported_transfer_encoding'
      | 'expectation_failed'
      | 'http_version_not_supported'
    >
  | undefined {
  // Node's parser reads any HTTP/x.y line; only 1.0 and 1.1 are HTTP/1 (RFC 9110 15.6.6: 505).
  // An `HTTP/2.0` request in HTTP/1 framing skipped the Host check and got a 100 Continue.
  if (
    request.httpVersion !== undefined &&
    request.httpVersion !== '1.1' &&
    request.httpVersion !== '1.0'
  ) {
    return VERSION_NOT_SUPPORTED;
  }
  // RFC 9112 3.2: an HTTP/1.1 request without exactly one Host is answered 400.
  if (request.httpVersion === '1.1' && countHeader(request.rawHeaders, 'host') !== 1) {
    return INVALID_HOST;
  }
  const transfer = request.headers['transfer-encoding'];
  // Node's parser already refuses a request whose last coding is not chunked; any coding
  // before it (gzip, chunked) would be read as if absent. RFC 9112 6.1: 501 for a coding not
  // understood.
  if (transfer !== undefined && !onlyCodings(transfer, 'chunked')) {
    return UNSUPPORTED_TRANSFER_ENCODING;
  }
  // RFC 9110 10.1.1: HTTP/1.0 had no expectations; its Expect header is ignored.
  if (
    request.headers.expect !== undefined &&
    request.httpVersion !== '1.0' &&
    !expectsContinue(request.headers)
  ) {
    return EXPECTATION_FAILED;
  }
  return undefined;
}

/** True when a coding list (`a, b`) names `coding` and nothing else, in any letter case. */
export function onlyCodings(list: string, coding: string): boolean {
  const codings = codingsOf(list);
  return codings.length === 1 && codings[0] === coding;
}

function countHeader(rawHeaders: readonly string[], name: string): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const key = rawHeaders[i] as string;
    if (key.length === name.length && key.toLowerCase() === name) count++;
  }
  return count;
}

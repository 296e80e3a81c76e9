/**
 * The one outbound HTTP call (runners, channel APIs, token endpoints): one
 * undici request bounded by a timeout combined with the caller's signal,
 * whose answer is read while it streams under a byte cap. The result is
 * typed, so a caller tells an answer from "too large", a timeout, its own
 * abort and a connection failure without reading error messages.
 */
import { request } from 'undici';
import { collectBytes } from '../byte-collector.ts';
import { ACCEPT_IDENTITY } from './content-coding.ts';
import { linkedAbort } from '../linked-abort.ts';
import { leaseDispatcher } from './dispatcher-pools.ts';
import { WireFloodError } from './fragment-guard.ts';

export type OutboundHeaders = Record<string, string | string[] | undefined>;

export type OutboundRequest = {
  method?: 'POST' | 'GET' | 'PUT';
  headers: Record<string, string>;
  /** The body as sent (already serialised). */
  body?: string;
  /** Bound on the whole exchange, the answer's body included. */
  timeoutMs: number;
  /** The caller's signal (e.g. shutdown); combined with the timeout. */
  signal?: AbortSignal;
  /** Most bytes of answer body read; past it the request is aborted. */
  maxBytes: number;
};

export type OutboundResult =
  | { kind: 'answer'; status: number; headers: OutboundHeaders; text: string }
  /**
   * The answer's body passed `maxBytes` (`receivedBytes`: what was read before stopping), or its
   * bytes on the wire passed their bound after its status came (`receivedBytes`: those bytes).
   */
  | { kind: 'too_large'; status: number; maxBytes: number; receivedBytes: number }
  /**
   * The answer's headers (or trailers) passed undici's header size cap, or its bytes on the
   * wire passed their bound before its status came (an endless status line, 1xx answers without
   * end): the peer was reached and answered, so this is never "unreachable".
   */
  | { kind: 'headers_too_large'; status?: number }
  /**
   * The answer's body came in too many tiny pieces (a byte per chunk): the peer answered in a
   * shape no honest server sends, and reading it on would hold the event loop.
   */
  | { kind: 'too_fragmented'; status: number }
  /** `answerStatus`: an answer began (with this status), then its body did not end in time. */
  | { kind: 'timeout'; answerStatus?: number }
  /** The caller's signal ended the call; `answerStatus`: after an answer began with it. */
  | { kind: 'aborted'; answerStatus?: number }
  /**
   * No (complete) answer. `beforeSending`: the request cannot have reached
   * the peer. `answerStatus`: an answer began (with this status) and broke off.
   */
  | { kind: 'failed'; code: string; beforeSending: boolean; answerStatus?: number };

// Failures before the request could have reached the peer: resending is safe.
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

// undici's own header and body timeouts count as ours.
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

// Headers or trailers over undici's cap (Node's max header size, 16 KiB by default).
const HEADERS_OVERFLOW = 'UND_ERR_HEADERS_OVERFLOW';

// fragment-guard.ts stopped the answer.
const TOO_FRAGMENTED = 'ANSWER_TOO_FRAGMENTED';

// Node fires a longer timer at once (with a warning): a timeout of ~25 days or more is this.
const MAX_TIMER_MS = 2 ** 31 - 1;

// Strips a UTF-8 byte order mark, as undici's own text() does.
const utf8 = new TextDecoder();

/**
 * The call's own abort signal: the timeout and the caller's signal, both released when the
 * call ends (a timer of its own rather than AbortSignal.timeout: linked-abort.ts says why;
 * with runs of minutes that held about 0.5 KB per call, hundreds of MB under load).
 */
function callSignal(timeoutMs: number, outer: AbortSignal | undefined) {
  const link = linkedAbort(outer);
  let timedOut = false;
  const timer = setTimeout(
    () => {
      timedOut = true;
      link.abort(new Error('timeout'));
    },
    Math.min(timeoutMs, MAX_TIMER_MS),
  );
  timer.unref();
  return {
    signal: link.signal,
    timedOut: () => timedOut,
    release() {
      clearTimeout(timer);
      link.release();
    },
  };
}

/** Make one HTTP call and read its answer under the byte cap. */
export async function outboundCall(url: string, call: OutboundRequest): Promise<OutboundResult> {
  const bound = callSignal(call.timeoutMs, call.signal);
  const pool = leaseDispatcher(call.maxBytes);
  let answerStatus: number | undefined;
  try {
    const response = await request(url, {
      method: call.method ?? 'POST',
      headers: withIdentity(call.headers),
      body: call.body,
      signal: bound.signal,
      dispatcher: pool.dispatcher,
      // undici's own waits (300 s for the headers, 300 s between pieces of the body) would end a
      // call allowed longer, such as an agent turn of the default 600 s, half way: the call's
      // timeout bounds the whole exchange alone.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    answerStatus = response.statusCode;
    const read = await readCapped(response.body, response.headers, call.maxBytes);
    if (typeof read === 'number') {
      return {
        kind: 'too_large',
        status: response.statusCode,
        maxBytes: call.maxBytes,
        receivedBytes: read,
      };
    }
    return { kind: 'answer', status: response.statusCode, headers: response.headers, text: read };
  } catch (err) {
    if (call.signal?.aborted)
      return answerStatus === undefined ? { kind: 'aborted' } : { kind: 'aborted', answerStatus };
    const code = errorCode(err);
    if (bound.timedOut() || TIMEOUT_CODES.has(code))
      return answerStatus === undefined ? { kind: 'timeout' } : { kind: 'timeout', answerStatus };
    if (code === TOO_FRAGMENTED && answerStatus !== undefined)
      return { kind: 'too_fragmented', status: answerStatus };
    if (err instanceof WireFloodError && answerStatus !== undefined)
      return {
        kind: 'too_large',
        status: answerStatus,
        maxBytes: call.maxBytes,
        receivedBytes: err.received,
      };
    if (code === HEADERS_OVERFLOW || err instanceof WireFloodError)
      return answerStatus === undefined
        ? { kind: 'headers_too_large' }
        : { kind: 'headers_too_large', status: answerStatus };
    const failed = { kind: 'failed', code, beforeSending: CONNECT_CODES.has(code) } as const;
    return answerStatus === undefined ? failed : { ...failed, answerStatus };
  } finally {
    // The answer is read or destroyed by now: the pool may be closed once no call holds it.
    pool.release();
    bound.release();
  }
}

/**
 * The headers with `accept-encoding: identity`, in place of any coding the caller (an operator's
 * runner `headers`) named: without it a server may use any coding (RFC 9110), and answers are
 * never decoded, so a compressed answer could only fail.
 */
function withIdentity(headers: Record<string, string>): Record<string, string> {
  const kept = Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'accept-encoding');
  return { ...Object.fromEntries(kept), 'accept-encoding': ACCEPT_IDENTITY };
}

type Body = AsyncIterable<Buffer> & { destroy(): unknown };

/**
 * The body as text, or the bytes read when it passed `maxBytes`: never more
 * than the cap (in one buffer) plus one chunk is held, and the request is aborted at once.
 */
async function readCapped(
  body: Body,
  headers: OutboundHeaders,
  maxBytes: number,
): Promise<string | number> {
  const declared = Number(headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    body.destroy();
    return 0;
  }
  const collected = collectBytes(maxBytes);
  for await (const chunk of body) {
    if (!collected.add(chunk)) {
      body.destroy();
      return collected.received();
    }
  }
  return utf8.decode(collected.bytes());
}

// The error's code or class name only: undici messages can name the host and port.
function errorCode(err: unknown): string {
  const error = err as { code?: unknown; name?: unknown; cause?: { code?: unknown } } | undefined;
  if (typeof error?.code === 'string') return error.code;
  if (typeof error?.cause?.code === 'string') return error.cause.code;
  return typeof error?.name === 'string' ? error.name : 'unknown error';
}

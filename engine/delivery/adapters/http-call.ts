/**
 * The HTTP call every channel adapter makes: one request over undici with a
 * timeout (settings.timeoutMs) combined with the caller's signal, answering
 * with the status, headers and parsed body, or with a `retry` result when no
 * answer came (connection error, timeout, abort). Reasons built here name
 * error codes only: never the URL (it can carry a token) or the body.
 */
import { request } from 'undici';
import type { SendResult } from '../adapter.ts';

export type HttpHeaders = Record<string, string | string[] | undefined>;

/** The product's answer to one call. */
export type HttpReply = {
  status: number;
  headers: HttpHeaders;
  /** The raw body text. */
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
};

/** Either the product answered (`reply`) or it did not (`result`, always a retry). */
export type HttpOutcome =
  | { reply: HttpReply; result?: undefined }
  | { reply?: undefined; result: Extract<SendResult, { status: 'retry' }> };

export type HttpCall = {
  method?: 'POST' | 'GET' | 'PUT';
  headers: Record<string, string>;
  /** The body as sent (already serialised). */
  body?: string;
  timeoutMs: number;
  /** The caller's signal (e.g. shutdown); combined with the timeout. */
  signal?: AbortSignal;
};

// Failures before the request could have reached the product: resending is safe.
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Make one HTTP call; a missing answer becomes a `retry` result. */
export async function httpCall(url: string, call: HttpCall): Promise<HttpOutcome> {
  const timeout = AbortSignal.timeout(call.timeoutMs);
  const signal = call.signal ? AbortSignal.any([timeout, call.signal]) : timeout;
  try {
    const response = await request(url, {
      method: call.method ?? 'POST',
      headers: call.headers,
      body: call.body,
      signal,
    });
    const text = await response.body.text();
    return {
      reply: {
        status: response.statusCode,
        headers: response.headers,
        text,
        json: parseJson(text),
      },
    };
  } catch (err) {
    return { result: noAnswer(err, timeout.aborted, call) };
  }
}

/** POST a JSON body (`content-type: application/json` unless the headers name another). */
export function postJson(
  url: string,
  body: unknown,
  call: Omit<HttpCall, 'body' | 'method'>,
): Promise<HttpOutcome> {
  return httpCall(url, {
    ...call,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...call.headers },
    body: JSON.stringify(body),
  });
}

function noAnswer(
  err: unknown,
  timedOut: boolean,
  call: HttpCall,
): Extract<SendResult, { status: 'retry' }> {
  const duplicate = 'the message may have been posted, so a retry can duplicate it';
  if (timedOut)
    return { status: 'retry', reason: `no answer within ${call.timeoutMs} ms; ${duplicate}` };
  if (call.signal?.aborted) return { status: 'retry', reason: `interrupted; ${duplicate}` };
  const code = errorCode(err);
  if (CONNECT_CODES.has(code)) return { status: 'retry', reason: `could not connect (${code})` };
  return { status: 'retry', reason: `connection failed (${code}); ${duplicate}` };
}

// The error's code or class name only: undici messages can name the host and port.
function errorCode(err: unknown): string {
  const error = err as { code?: unknown; name?: unknown; cause?: { code?: unknown } } | undefined;
  if (typeof error?.code === 'string') return error.code;
  if (typeof error?.cause?.code === 'string') return error.cause.code;
  return typeof error?.name === 'string' ? error.name : 'unknown error';
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A `Retry-After` header (seconds, decimals allowed, or an HTTP date) in ms. */
export function retryAfterHeaderMs(value: string | string[] | undefined, nowMs = Date.now()) {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.ceil(Number(text) * 1000);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/** Seconds from a JSON wait field (e.g. `retry_after`) in ms, if it is a sane number. */
export function secondsToMs(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
    ? Math.ceil(value * 1000)
    : undefined;
}

/** A product's own error text, shortened for a reason and with the given secrets blanked. */
export function detail(text: unknown, secrets: readonly string[] = [], max = 200): string {
  if (typeof text !== 'string') return '';
  let out = text.replace(/\s+/g, ' ').trim();
  for (const secret of secrets) if (secret) out = out.replaceAll(secret, '***');
  return out.length > max ? `${out.slice(0, max)}…` : out;
}

/** A `retry` result, with the wait only when there is one. */
export function retry(reason: string, retryAfterMs?: number): SendResult {
  return retryAfterMs === undefined
    ? { status: 'retry', reason }
    : { status: 'retry', reason, retryAfterMs };
}

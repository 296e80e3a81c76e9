/**
 * The HTTP call every channel adapter makes, through the one outbound client
 * (engine/outbound/http-client.ts): the product's status, headers and parsed
 * body, or a result when no usable answer came: `retry` when none came
 * (connection error, timeout, abort), `failed` when it passed the byte cap.
 * Reasons built here name error codes only: never the URL (it can carry a
 * token) or the body.
 */
import {
  type OutboundHeaders,
  type OutboundResult,
  outboundCall,
} from '../../outbound/http-client.ts';
import { parseAnswerJson } from '../../outbound/answer-json.ts';
import type { SendResult } from '../adapter.ts';

export type HttpHeaders = OutboundHeaders;

/** The product's answer to one call. */
export type HttpReply = {
  status: number;
  headers: HttpHeaders;
  /** The raw body text. */
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
};

/**
 * Most bytes of a channel or token API's answer that are read. Real answers
 * are a few KB; past this the request is aborted and the part fails.
 */
export const CHANNEL_ANSWER_MAX_BYTES = 1_048_576;

/** Either the product answered (`reply`) or it did not (`result`). */
export type HttpOutcome =
  | { reply: HttpReply; result?: undefined }
  | { reply?: undefined; result: Extract<SendResult, { status: 'retry' | 'failed' }> };

export type HttpCall = {
  method?: 'POST' | 'GET' | 'PUT';
  headers: Record<string, string>;
  /** The body as sent (already serialised). */
  body?: string;
  timeoutMs: number;
  /** The caller's signal (e.g. shutdown); combined with the timeout. */
  signal?: AbortSignal;
  /** The call posts a message (postJson): a 2xx that broke off may have posted it. */
  posts?: boolean;
};

/** Make one HTTP call; a missing answer becomes a `retry` result. */
export async function httpCall(url: string, call: HttpCall): Promise<HttpOutcome> {
  const outcome = await outboundCall(url, { ...call, maxBytes: CHANNEL_ANSWER_MAX_BYTES });
  if (outcome.kind === 'answer') {
    const { status, headers, text } = outcome;
    return { reply: { status, headers, text, json: parseJson(text) } };
  }
  // A shutdown that cut an answer short is an answer broken off too: its status was given.
  const brokenOff =
    outcome.kind === 'timeout' || outcome.kind === 'failed' || outcome.kind === 'aborted'
      ? outcome.answerStatus
      : undefined;
  if (brokenOff !== undefined) return { result: brokenOffResult(brokenOff, call.posts === true) };
  return { result: noAnswer(outcome, call) };
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
    posts: true,
  });
}

function noAnswer(
  outcome: Exclude<OutboundResult, { kind: 'answer' }>,
  call: HttpCall,
): Extract<SendResult, { status: 'retry' | 'failed' }> {
  const duplicate = 'the message may have been posted, so a retry can duplicate it';
  // An answer came, so the request arrived and may have posted the message: not resent.
  if (outcome.kind === 'too_large') {
    const reason = `HTTP ${outcome.status} answer exceeded ${outcome.maxBytes} bytes; the message may have been posted, not resent`;
    return { status: 'failed', reason };
  }
  if (outcome.kind === 'headers_too_large') {
    const reason = 'answer headers too large; the message may have been posted, not resent';
    return { status: 'failed', reason };
  }
  if (outcome.kind === 'too_fragmented') {
    const reason = `HTTP ${outcome.status} answer came in too many tiny pieces; the message may have been posted, not resent`;
    return { status: 'failed', reason };
  }
  if (outcome.kind === 'timeout')
    return { status: 'retry', reason: `no answer within ${call.timeoutMs} ms; ${duplicate}` };
  if (outcome.kind === 'aborted') return { status: 'retry', reason: `interrupted; ${duplicate}` };
  if (outcome.beforeSending)
    return { status: 'retry', reason: `could not connect (${outcome.code})` };
  return { status: 'retry', reason: `connection failed (${outcome.code}); ${duplicate}` };
}

/**
 * An answer whose status came and whose body then broke off or stalled. A 2xx: the product
 * took the part, and the body that would say more (Signal's per-recipient failures, a
 * WhatsApp error, Slack's `ok`) never came: not resent (it would post twice), as an answer too
 * large is not. Any other status refused the part, so nothing was posted: sent again, as a
 * whole refusal would mostly be (a refreshed token, a wait, a moved chat); so is a call that
 * posts nothing (a token's answer, needed whole).
 */
function brokenOffResult(
  status: number,
  posts: boolean,
): Extract<SendResult, { status: 'retry' | 'failed' }> {
  if (posts && status >= 200 && status < 300) {
    const reason = `HTTP ${status}, then the answer broke off; the message may have been posted, not resent`;
    return { status: 'failed', reason };
  }
  return { status: 'retry', reason: `HTTP ${status}, then the answer broke off` };
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  return parseAnswerJson(text);
}

/** Seconds from a JSON wait field (e.g. `retry_after`) in ms, if it is a sane number. */
export function secondsToMs(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
    ? Math.ceil(value * 1000)
    : undefined;
}

/** A `retry` result, with the wait only when there is one. */
export function retry(reason: string, retryAfterMs?: number): SendResult {
  return retryAfterMs === undefined
    ? { status: 'retry', reason }
    : { status: 'retry', reason, retryAfterMs };
}

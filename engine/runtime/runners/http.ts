/**
 * The `http` runner: POSTs the run (the same JSON the command runner gets)
 * to a URL and expects `{"reply": "..."}`. 408, 425, 429 and 5xx, and connection
 * errors before any answer, mean no reply came: retried, honouring
 * Retry-After (a connection lost after the run was sent is retried too, said
 * so, with the run's id as Idempotency-Key). An answer over the byte cap is
 * final.
 */
import { type OutboundResult, outboundCall } from '../../outbound/http-client.ts';
import { retryAfterMs } from '../../outbound/retry-after.ts';
import { answerCoding } from '../../outbound/content-coding.ts';
import { parseAnswerJson } from '../../outbound/answer-json.ts';
import { answerError } from './answer-error.ts';
import {
  answerDetail,
  answerEnd,
  headerSecrets,
  urlSecrets,
} from '../../outbound/answer-detail.ts';
import {
  DEFAULT_MAX_REPLY_BYTES,
  type RunHooks,
  type RunRequest,
  type RunResult,
  type Runner,
  replyTooLarge,
  tail,
} from './runner.ts';

export type HttpRunnerOptions = {
  url: string;
  headers?: Readonly<Record<string, string>>;
  /** Most bytes of answer read (`runtime.maxReplyBytes`); more is a final error. */
  maxReplyBytes?: number;
};

// The work did not happen: the request was not read in time (408), not risked yet (425, Too
// Early), rate limited (429), or the server failed (5xx).
function retryableStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || status >= 500;
}

/**
 * Classify a failed HTTP exchange: retryable or final. The endpoint was sent
 * `secrets` (a key, header values) and may echo them (`Incorrect API key
 * provided: ...`): they are blanked before the body's end enters the reason.
 */
export function httpFailure(
  status: number,
  body: string,
  retryAfter: string | string[] | undefined,
  secrets: readonly string[] = [],
): Extract<RunResult, { status: 'retry' | 'error' }> {
  // Blanked before the cut, so no cut can leave part of a secret.
  const said = body ? tail(answerEnd(body, secrets, false, 200), 200) : '';
  const reason = `HTTP ${status}${said ? `: ${said}` : ''}`;
  if (retryableStatus(status)) {
    const wait = retryAfterMs(retryAfter);
    return { status: 'retry', reason, ...(wait !== undefined && { retryAfterMs: wait }) };
  }
  return { status: 'error', reason };
}

function encodedBody(coding: string): string {
  return coding === 'unnamed'
    ? 'an encoded body, not decoded'
    : `a ${coding}-encoded body, not decoded`;
}

// Headers hookgate sets that carry nothing secret.
const PLAIN_HEADERS = new Set(['content-type', 'idempotency-key']);

/** The credentials a call to a runner's endpoint carries: its URL's and every header's but hookgate's own. */
function callSecrets(url: string, headers: Readonly<Record<string, string>>): string[] {
  const sent = Object.entries(headers).filter(([name]) => !PLAIN_HEADERS.has(name.toLowerCase()));
  return [...urlSecrets(url), ...headerSecrets(Object.fromEntries(sent))];
}

/** Map an exchange that gave no usable answer (too large, timeout, abort, connection) to a result. */
export function noAnswer(
  outcome: Exclude<OutboundResult, { kind: 'answer' }>,
  timeoutSeconds: number,
): RunResult {
  // Checked first: an answer that came is never "unreachable", however it ended.
  if (outcome.kind === 'too_large') return replyTooLarge(outcome.maxBytes);
  if (outcome.kind === 'headers_too_large')
    return { status: 'error', reason: "the runner's answer headers are too large" };
  if (outcome.kind === 'too_fragmented')
    return {
      status: 'error',
      reason: `HTTP ${outcome.status}: the answer came in too many tiny pieces`,
    };
  if (outcome.kind === 'aborted') return { status: 'retry', reason: 'interrupted by shutdown' };
  if (outcome.kind === 'timeout') {
    return { status: 'timeout', reason: `no reply within ${timeoutSeconds}s` };
  }
  if (outcome.answerStatus === undefined && outcome.beforeSending) {
    return { status: 'retry', reason: `unreachable: ${outcome.code}` };
  }
  // Sent, then nothing: the endpoint may have run the turn (its answer is lost, so the turn is
  // run again; the http runner's Idempotency-Key lets an endpoint answer from what it did).
  if (outcome.answerStatus === undefined) {
    const reason = `connection lost after the run was sent (${outcome.code}); the turn may have run, and runs again`;
    return { status: 'retry', reason };
  }
  // The runner began to answer, so it was reached: its status decides, as for a whole answer.
  const reason = `HTTP ${outcome.answerStatus}: the answer broke off (${outcome.code})`;
  return retryableStatus(outcome.answerStatus)
    ? { status: 'retry', reason }
    : { status: 'error', reason };
}

/** One POST of a run to an endpoint, bounded by the run's timeout; `readReply` finds the reply. */
export async function postForReply(
  call: { url: string; headers: Record<string, string>; body: string; maxBytes: number },
  run: RunRequest,
  hooks: RunHooks,
  readReply: (parsed: unknown) => unknown,
  missing: string,
): Promise<RunResult> {
  const outcome = await outboundCall(call.url, {
    method: 'POST',
    headers: call.headers,
    body: call.body,
    timeoutMs: run.timeoutSeconds * 1000,
    ...(hooks.signal && { signal: hooks.signal }),
    maxBytes: call.maxBytes,
  });
  if (outcome.kind !== 'answer') return noAnswer(outcome, run.timeoutSeconds);
  // Compressed although identity was asked for: never decoded, its bytes are no text to show.
  const coding = answerCoding(outcome.headers['content-encoding']);
  if (outcome.status < 200 || outcome.status >= 300) {
    const secrets = callSecrets(call.url, call.headers);
    const body = coding ? '' : outcome.text;
    const failure = httpFailure(outcome.status, body, outcome.headers['retry-after'], secrets);
    return coding ? { ...failure, reason: `${failure.reason} (${encodedBody(coding)})` } : failure;
  }
  if (coding)
    return {
      status: 'error',
      reason: `the response is ${coding === 'unnamed' ? 'encoded' : `${coding}-encoded`}: hookgate asks for identity and does not decode answers`,
    };
  // Undefined: not JSON, or nested deeper than any honest answer (parsing that would stall).
  const parsed = parseAnswerJson(outcome.text);
  if (parsed === undefined) return { status: 'error', reason: 'the response is not JSON' };
  const reply = readReply(parsed);
  if (typeof reply !== 'string') {
    // A 200 that carries an error object (or a refusal) says why: shown, its credentials blanked.
    const error = answerError(parsed);
    if (error === undefined) return { status: 'error', reason: missing };
    // From its start: an error message says what went wrong first ("Rate limit exceeded for…").
    const said = answerDetail(error, callSecrets(call.url, call.headers), 200);
    return { status: 'error', reason: `${missing}: ${said}` };
  }
  return { status: 'ok', reply: reply.trim() };
}

/** Create an http runner. */
export function createHttpRunner(options: HttpRunnerOptions): Runner {
  // An operator's own Idempotency-Key (any spelling) is sent instead of the run's id.
  const ownKey = Object.keys(options.headers ?? {}).some(
    (name) => name.toLowerCase() === 'idempotency-key',
  );
  return {
    run(run: RunRequest, hooks: RunHooks = {}): Promise<RunResult> {
      const call = {
        url: options.url,
        // The run's id, the same on every attempt of an agent run: an endpoint that ran the
        // turn and lost the connection before answering can tell the retry from new work.
        headers: {
          'content-type': 'application/json',
          ...(!ownKey && { 'idempotency-key': run.runId }),
          ...options.headers,
        },
        body: JSON.stringify(run),
        maxBytes: options.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES,
      };
      return postForReply(
        call,
        run,
        hooks,
        (parsed) => (parsed as { reply?: unknown } | null)?.reply,
        'the response has no "reply" string',
      );
    },
  };
}

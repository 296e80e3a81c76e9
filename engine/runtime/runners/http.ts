/**
 * The `http` runner: POSTs the run (the same JSON the command runner gets)
 * to a URL and expects `{"reply": "..."}`. 429 and 5xx, and connection
 * errors, mean the work did not happen: retried, honouring Retry-After.
 */
import { request } from 'undici';
import {
  type RunHooks,
  type RunRequest,
  type RunResult,
  type Runner,
  retryAfterMs,
  tail,
} from './runner.ts';

export type HttpRunnerOptions = { url: string; headers?: Readonly<Record<string, string>> };

/** Classify a failed HTTP exchange: retryable or final. */
export function httpFailure(
  status: number,
  body: string,
  retryAfter: string | string[] | undefined,
): RunResult {
  if (status === 429 || status >= 500) {
    const wait = retryAfterMs(retryAfter);
    return {
      status: 'retry',
      reason: `HTTP ${status}${body ? `: ${tail(body, 200)}` : ''}`,
      ...(wait !== undefined && { retryAfterMs: wait }),
    };
  }
  return { status: 'error', reason: `HTTP ${status}${body ? `: ${tail(body, 200)}` : ''}` };
}

/** Map a thrown request error (timeout, abort, connection) to a result. */
export function requestFailure(err: unknown, timeoutSeconds: number, hooks: RunHooks): RunResult {
  if (hooks.signal?.aborted) return { status: 'retry', reason: 'interrupted by shutdown' };
  const error = err as Error & { code?: string };
  if (
    error.name === 'TimeoutError' ||
    error.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    error.code === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return { status: 'timeout', reason: `no reply within ${timeoutSeconds}s` };
  }
  return { status: 'retry', reason: `unreachable: ${error.code ?? error.message}` };
}

/** One POST of a run to an endpoint, bounded by the run's timeout; `readReply` finds the reply. */
export async function postForReply(
  call: { url: string; headers: Record<string, string>; body: string },
  run: RunRequest,
  hooks: RunHooks,
  readReply: (parsed: unknown) => unknown,
  missing: string,
): Promise<RunResult> {
  const timeout = AbortSignal.timeout(run.timeoutSeconds * 1000);
  const signal = hooks.signal ? AbortSignal.any([timeout, hooks.signal]) : timeout;
  try {
    const response = await request(call.url, {
      method: 'POST',
      headers: call.headers,
      body: call.body,
      signal,
    });
    const body = await response.body.text();
    if (response.statusCode < 200 || response.statusCode >= 300) {
      return httpFailure(response.statusCode, body, response.headers['retry-after']);
    }
    const reply = readReply(JSON.parse(body));
    if (typeof reply !== 'string') return { status: 'error', reason: missing };
    return { status: 'ok', reply: reply.trim() };
  } catch (err) {
    if (err instanceof SyntaxError) return { status: 'error', reason: 'the response is not JSON' };
    const failure = timeout.aborted
      ? Object.assign(new Error('timeout'), { name: 'TimeoutError' })
      : err;
    return requestFailure(failure, run.timeoutSeconds, hooks);
  }
}

/** Create an http runner. */
export function createHttpRunner(options: HttpRunnerOptions): Runner {
  return {
    run(run: RunRequest, hooks: RunHooks = {}): Promise<RunResult> {
      const call = {
        url: options.url,
        headers: { 'content-type': 'application/json', ...options.headers },
        body: JSON.stringify(run),
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

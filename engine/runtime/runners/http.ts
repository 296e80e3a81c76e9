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

/** Create an http runner. */
export function createHttpRunner(options: HttpRunnerOptions): Runner {
  return {
    async run(run: RunRequest, hooks: RunHooks = {}): Promise<RunResult> {
      const timeout = AbortSignal.timeout(run.timeoutSeconds * 1000);
      const signal = hooks.signal ? AbortSignal.any([timeout, hooks.signal]) : timeout;
      try {
        const response = await request(options.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...options.headers },
          body: JSON.stringify(run),
          signal,
        });
        const body = await response.body.text();
        if (response.statusCode < 200 || response.statusCode >= 300) {
          return httpFailure(response.statusCode, body, response.headers['retry-after']);
        }
        const parsed = JSON.parse(body) as { reply?: unknown };
        if (typeof parsed.reply !== 'string')
          return { status: 'error', reason: 'the response has no "reply" string' };
        return { status: 'ok', reply: parsed.reply.trim() };
      } catch (err) {
        if (err instanceof SyntaxError)
          return { status: 'error', reason: 'the response is not JSON' };
        return requestFailure(
          timeout.aborted ? Object.assign(new Error('timeout'), { name: 'TimeoutError' }) : err,
          run.timeoutSeconds,
          hooks,
        );
      }
    },
  };
}

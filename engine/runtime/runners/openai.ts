/**
 * The `openai` runner: an OpenAI-compatible chat-completions endpoint. The
 * session history becomes messages, the model ref `<provider>/<model>` is
 * mapped through the runner's `models` (default: the part after the
 * provider), and the thinking level becomes `reasoning_effort`.
 */
import { request } from 'undici';
import { httpFailure, requestFailure } from './http.ts';
import type { RunHooks, RunRequest, RunResult, Runner } from './runner.ts';

export type OpenAiRunnerOptions = {
  baseUrl: string;
  apiKey?: string;
  models?: Readonly<Record<string, string>>;
  defaultModel?: string;
  maxTokens?: number;
};

const EFFORT: Record<string, string | undefined> = {
  off: undefined,
  minimal: 'minimal',
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'high',
};

/** The model name the endpoint knows for a hookgate model ref. */
export function endpointModel(
  ref: string,
  models: Readonly<Record<string, string>> | undefined,
): string {
  const mapped = models?.[ref];
  if (mapped) return mapped;
  const slash = ref.indexOf('/');
  return slash < 0 ? ref : ref.slice(slash + 1);
}

/** The chat-completions request body for a run. */
export function chatBody(run: RunRequest, options: OpenAiRunnerOptions): Record<string, unknown> {
  const ref = run.model ?? options.defaultModel ?? 'openai/gpt-5-mini';
  const effort = run.thinking ? EFFORT[run.thinking] : undefined;
  return {
    model: endpointModel(ref, options.models),
    messages: [
      ...run.history.map((turn) => ({ role: turn.role, content: turn.text })),
      { role: 'user', content: run.message },
    ],
    ...(effort && { reasoning_effort: effort }),
    ...(options.maxTokens !== undefined && { max_completion_tokens: options.maxTokens }),
  };
}

/** Create an openai runner. */
export function createOpenAiRunner(options: OpenAiRunnerOptions): Runner {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  return {
    async run(run: RunRequest, hooks: RunHooks = {}): Promise<RunResult> {
      const timeout = AbortSignal.timeout(run.timeoutSeconds * 1000);
      const signal = hooks.signal ? AbortSignal.any([timeout, hooks.signal]) : timeout;
      try {
        const response = await request(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(options.apiKey && { authorization: `Bearer ${options.apiKey}` }),
          },
          body: JSON.stringify(chatBody(run, options)),
          signal,
        });
        const body = await response.body.text();
        if (response.statusCode < 200 || response.statusCode >= 300) {
          return httpFailure(response.statusCode, body, response.headers['retry-after']);
        }
        const parsed = JSON.parse(body) as { choices?: Array<{ message?: { content?: unknown } }> };
        const content = parsed.choices?.[0]?.message?.content;
        if (typeof content !== 'string')
          return { status: 'error', reason: 'the response has no message content' };
        return { status: 'ok', reply: content.trim() };
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

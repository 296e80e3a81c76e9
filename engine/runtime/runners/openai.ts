/**
 * The `openai` runner: an OpenAI-compatible chat-completions endpoint. The
 * session history becomes messages, the model ref `<provider>/<model>` is
 * mapped through the runner's `models` (default: the part after the
 * provider), and the thinking level becomes `reasoning_effort`.
 */
import { postForReply } from './http.ts';
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
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...(options.apiKey && { authorization: `Bearer ${options.apiKey}` }),
  };
  const readReply = (parsed: unknown) =>
    (parsed as { choices?: Array<{ message?: { content?: unknown } }> } | null)?.choices?.[0]
      ?.message?.content;
  return {
    run(run: RunRequest, hooks: RunHooks = {}): Promise<RunResult> {
      const call = { url, headers, body: JSON.stringify(chatBody(run, options)) };
      return postForReply(call, run, hooks, readReply, 'the response has no message content');
    },
  };
}

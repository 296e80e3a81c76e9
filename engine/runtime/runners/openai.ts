/**
 * The `openai` runner: an OpenAI-compatible chat-completions endpoint. The
 * session history becomes messages, the model ref `<provider>/<model>` is
 * mapped through the runner's `models` (default: the part after the
 * provider), and the thinking level becomes `reasoning_effort`.
 */
import { postForReply } from './http.ts';
import {
  DEFAULT_MAX_REPLY_BYTES,
  type RunHooks,
  type RunRequest,
  type RunResult,
  type Runner,
} from './runner.ts';

/** An endpoint for the models of one provider (top-level `providers` in the config). */
export type Provider = {
  baseUrl?: string;
  apiKey?: string;
  models?: Readonly<Record<string, string>>;
};

export type OpenAiRunnerOptions = {
  /** The runner's own endpoint; a provider's `baseUrl` wins for that provider's models. */
  baseUrl?: string;
  apiKey?: string;
  models?: Readonly<Record<string, string>>;
  defaultModel?: string;
  maxTokens?: number;
  providers?: Readonly<Record<string, Provider>>;
  /** Most bytes of answer read (`runtime.maxReplyBytes`); more is a final error. */
  maxReplyBytes?: number;
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
  const ref = modelRef(run, options);
  const effort = run.thinking ? EFFORT[run.thinking] : undefined;
  const provider = providerOf(ref, options);
  const name = ref.slice(ref.indexOf('/') + 1);
  return {
    model: provider?.models?.[name] ?? endpointModel(ref, options.models),
    messages: [
      ...run.history.map((turn) => ({ role: turn.role, content: turn.text })),
      { role: 'user', content: run.message },
    ],
    ...(effort && { reasoning_effort: effort }),
    ...(options.maxTokens !== undefined && { max_completion_tokens: options.maxTokens }),
  };
}

function modelRef(run: RunRequest, options: OpenAiRunnerOptions): string {
  return run.model ?? options.defaultModel ?? 'openai/gpt-5-mini';
}

function providerOf(ref: string, options: OpenAiRunnerOptions): Provider | undefined {
  const slash = ref.indexOf('/');
  return slash < 0 ? undefined : options.providers?.[ref.slice(0, slash)];
}

/** Where a run goes: its model's provider endpoint, else the runner's own. */
export function endpointFor(
  run: RunRequest,
  options: OpenAiRunnerOptions,
): { url: string; apiKey?: string } | undefined {
  const provider = providerOf(modelRef(run, options), options);
  const baseUrl = provider?.baseUrl ?? options.baseUrl;
  if (!baseUrl) return undefined;
  const apiKey = provider?.baseUrl ? provider.apiKey : (provider?.apiKey ?? options.apiKey);
  return { url: `${baseUrl.replace(/\/+$/, '')}/chat/completions`, ...(apiKey && { apiKey }) };
}

/**
 * The reply of a chat completion: its first choice's `content`, a string or, as some
 * compatible endpoints answer, an array of parts whose `text` parts are the reply (a
 * reasoning part beside them is not). Anything else is undefined (no reply). Pure.
 */
export function completionText(parsed: unknown): string | undefined {
  const content = (parsed as { choices?: Array<{ message?: { content?: unknown } }> } | null)
    ?.choices?.[0]?.message?.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  const texts = content.flatMap((part: unknown) => {
    const { type, text } = (part ?? {}) as { type?: unknown; text?: unknown };
    return type === 'text' && typeof text === 'string' ? [text] : [];
  });
  return texts.length > 0 ? texts.join('') : undefined;
}

/** Create an openai runner. */
export function createOpenAiRunner(options: OpenAiRunnerOptions): Runner {
  return {
    run(run: RunRequest, hooks: RunHooks = {}): Promise<RunResult> {
      const endpoint = endpointFor(run, options);
      if (!endpoint) {
        const reason = `no endpoint for model "${modelRef(run, options)}": set the runner's baseUrl or providers.<name>.baseUrl`;
        return Promise.resolve({ status: 'error', reason });
      }
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        ...(endpoint.apiKey && { authorization: `Bearer ${endpoint.apiKey}` }),
      };
      const call = {
        url: endpoint.url,
        headers,
        body: JSON.stringify(chatBody(run, options)),
        maxBytes: options.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES,
      };
      return postForReply(call, run, hooks, completionText, 'the response has no message content');
    },
  };
}

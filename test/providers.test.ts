/**
 * The openai runner's `providers`: a model ref `<provider>/<model>` goes to its
 * provider's endpoint with its key, under the endpoint's model name.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatBody, createOpenAiRunner, endpointFor } from '../engine/runtime/runners/openai.ts';
import type { RunRequest } from '../engine/runtime/runners/runner.ts';
import { type StandIn, startStandIn } from './helpers/stand-in.ts';

const run = (model?: string): RunRequest => ({
  kind: 'agent',
  runId: 'r1',
  agentId: 'main',
  sessionKey: 'hook:x',
  message: 'Hello',
  model: model ?? null,
  thinking: null,
  timeoutSeconds: 5,
  history: [],
});

describe('providers', () => {
  const providers = {
    local: {
      baseUrl: 'http://127.0.0.1:11434/v1/',
      apiKey: 'local-key',
      models: { 'llama-small': 'llama3.2:1b' },
    },
    openai: { apiKey: 'openai-key' },
  };

  it.each([
    [
      'a provider with its own endpoint',
      'local/llama-small',
      'http://127.0.0.1:11434/v1/chat/completions',
      'local-key',
    ],
    [
      "a provider without endpoint uses the runner's, with the provider key",
      'openai/gpt-5-mini',
      'https://api.example/v1/chat/completions',
      'openai-key',
    ],
    [
      "an unknown provider uses the runner's endpoint and key",
      'other/model',
      'https://api.example/v1/chat/completions',
      'runner-key',
    ],
  ])('%s', (_name, model, url, apiKey) => {
    const options = { baseUrl: 'https://api.example/v1', apiKey: 'runner-key', providers };
    expect(endpointFor(run(model), options)).toEqual({ url, apiKey });
  });

  it('maps the model name through the provider, else drops the provider prefix', () => {
    expect(chatBody(run('local/llama-small'), { providers })['model']).toBe('llama3.2:1b');
    expect(chatBody(run('openai/gpt-5-mini'), { providers })['model']).toBe('gpt-5-mini');
  });

  it('says plainly when no endpoint is known', async () => {
    const result = await createOpenAiRunner({ providers }).run(run('openai/gpt-5-mini'));
    expect(result).toMatchObject({
      status: 'error',
      reason: expect.stringContaining('no endpoint'),
    });
  });

  describe('over HTTP', () => {
    let standIn: StandIn;
    beforeAll(async () => {
      standIn = await startStandIn(() => ({
        status: 200,
        body: { choices: [{ message: { role: 'assistant', content: ' from the provider ' } }] },
      }));
    });
    afterAll(() => standIn.close());

    it('posts to the provider endpoint with its key and model name', async () => {
      const runner = createOpenAiRunner({
        providers: {
          local: { baseUrl: `${standIn.url}/v1`, apiKey: 'k', models: { small: 'tiny:1b' } },
        },
      });
      const result = await runner.run(run('local/small'));
      expect(result).toEqual({ status: 'ok', reply: 'from the provider' });
      const sent = standIn.requests.at(-1);
      expect(sent?.url).toBe('/v1/chat/completions');
      expect(sent?.headers['authorization']).toBe('Bearer k');
      expect((sent?.json as { model: string } | undefined)?.model).toBe('tiny:1b');
    });
  });
});

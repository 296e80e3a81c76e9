/**
 * The `http` and `openai` runners against local endpoints on 127.0.0.1 that
 * speak the wire formats (`{"reply": ...}`; chat completions), first on
 * their own, then through a running hookgate: retries only for work that did
 * not happen (503, 429 honouring Retry-After, connection errors), dead after
 * runtime.retry.maxAttempts, and a slow response past timeoutSeconds that is
 * cancelled and final.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createHttpRunner } from '../engine/runtime/runners/http.ts';
import { createOpenAiRunner } from '../engine/runtime/runners/openai.ts';
import type { RunRequest } from '../engine/runtime/runners/runner.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import {
  chatCompletion,
  type Stub,
  type StubReply,
  summaries,
  sleep,
  startStub,
  waitFor,
  waitForFinal,
} from './helpers/runtime.ts';
import { unwrap } from './helpers/wrapped.ts';

const KEY_ENV = 'HOOKGATE_TEST_OPENAI_KEY';
process.env[KEY_ENV] = 'sk-test-0123456789';
afterAll(() => {
  delete process.env[KEY_ENV];
});

const stubs: Stub[] = [];
const servers: Array<{ server: TestServer; cleanup: () => void }> = [];
afterEach(async () => {
  for (const { server, cleanup } of servers.splice(0)) {
    await server.stop();
    cleanup();
  }
  await Promise.all(stubs.splice(0).map((stub) => stub.close()));
});

async function stub(respond: (index: number) => StubReply): Promise<Stub> {
  const started = await startStub(respond);
  stubs.push(started);
  return started;
}

const RUN: RunRequest = {
  kind: 'agent',
  runId: 'run-1',
  agentId: 'ops',
  sessionKey: 'hook:r-1',
  message: 'What changed?',
  model: 'openai/gpt-5-mini',
  thinking: 'low',
  timeoutSeconds: 5,
  history: [
    { role: 'user', text: 'Earlier question' },
    { role: 'assistant', text: 'Earlier answer' },
  ],
};

/** An address where nothing listens (a stub that was closed). */
async function closedUrl(): Promise<string> {
  const gone = await startStub(() => ({}));
  await gone.close();
  return gone.url;
}

describe('http runner', () => {
  it('POSTs the run as JSON with the configured headers and takes the trimmed reply', async () => {
    const endpoint = await stub(() => ({ body: { reply: '  relayed it \n' } }));
    const runner = createHttpRunner({ url: `${endpoint.url}/run`, headers: { 'x-relay': 'abc' } });
    expect(await runner.run(RUN)).toEqual({ status: 'ok', reply: 'relayed it' });
    const [exchange] = endpoint.exchanges;
    expect(exchange).toMatchObject({ method: 'POST', url: '/run', body: RUN });
    expect(exchange?.headers['content-type']).toBe('application/json');
    expect(exchange?.headers['x-relay']).toBe('abc');
    // The run's id: an endpoint can tell a retry of a turn it ran from new work.
    expect(exchange?.headers['idempotency-key']).toBe(RUN.runId);
  });

  it("an operator's own Idempotency-Key header is sent instead of the run's id", async () => {
    const endpoint = await stub(() => ({ body: { reply: 'ok' } }));
    const runner = createHttpRunner({ url: endpoint.url, headers: { 'Idempotency-Key': 'mine' } });
    await runner.run(RUN);
    expect(endpoint.exchanges[0]?.headers['idempotency-key']).toBe('mine');
  });

  it('a connection lost after the run was sent is retried, and says the turn may have run', async () => {
    const endpoint = await stub(() => ({ drop: true }));
    const result = await createHttpRunner({ url: endpoint.url }).run(RUN);
    expect(result).toEqual({
      status: 'retry',
      reason: expect.stringMatching(
        /^connection lost after the run was sent \(\w+\); the turn may have run, and runs again$/,
      ),
    });
    expect(endpoint.exchanges).toHaveLength(1);
  });

  it.each<[string, StubReply, Record<string, unknown>]>([
    ['503', { status: 503, body: 'busy' }, { status: 'retry', reason: 'HTTP 503: busy' }],
    [
      '429 with Retry-After in seconds',
      { status: 429, headers: { 'retry-after': '3' }, body: 'slow down' },
      { status: 'retry', reason: 'HTTP 429: slow down', retryAfterMs: 3000 },
    ],
    [
      '502 with Retry-After',
      { status: 502, headers: { 'retry-after': '2' }, body: '' },
      { status: 'retry', reason: 'HTTP 502', retryAfterMs: 2000 },
    ],
    [
      '408: the endpoint timed out waiting for the run, which never reached it',
      { status: 408, body: 'request timeout' },
      { status: 'retry', reason: 'HTTP 408: request timeout' },
    ],
    [
      '425: the endpoint would not risk running it early (a proxy in TLS early data)',
      { status: 425, headers: { 'retry-after': '1' }, body: 'too early' },
      { status: 'retry', reason: 'HTTP 425: too early', retryAfterMs: 1000 },
    ],
    [
      '400 (final)',
      { status: 400, body: 'bad run' },
      { status: 'error', reason: 'HTTP 400: bad run' },
    ],
    [
      'a body that is not JSON',
      { body: 'hello' },
      { status: 'error', reason: 'the response is not JSON' },
    ],
    [
      'an answer with a reply and 400,000 levels of nesting (refused before parsing)',
      { body: `{"reply":"ok","x":${'['.repeat(400_000)}${']'.repeat(400_000)}}` },
      { status: 'error', reason: 'the response is not JSON' },
    ],
    [
      'JSON without a reply',
      { body: { answer: 'x' } },
      { status: 'error', reason: 'the response has no "reply" string' },
    ],
    [
      'a 200 carrying an error object and no reply (its error is shown)',
      { body: { error: { message: 'quota exceeded for project', code: 'quota' } } },
      {
        status: 'error',
        reason: 'the response has no "reply" string: quota exceeded for project',
      },
    ],
    [
      'a 200 carrying an error string and a reply of the wrong type',
      { body: { reply: 42, error: 'the agent crashed' } },
      { status: 'error', reason: 'the response has no "reply" string: the agent crashed' },
    ],
    [
      'a 200 carrying a long error message, shown from its start on one line',
      { body: { error: `Rate limit exceeded\nfor model x.${' Retry later.'.repeat(100)}` } },
      {
        status: 'error',
        reason: expect.stringMatching(
          /^the response has no "reply" string: Rate limit exceeded for model x\. Retry later\./,
        ),
      },
    ],
  ])('%s', async (_name, reply, expected) => {
    const endpoint = await stub(() => reply);
    expect(await createHttpRunner({ url: endpoint.url }).run(RUN)).toEqual(expected);
  });

  it('a 200 error object that echoes the credential shows it blanked', async () => {
    const endpoint = await stub(() => ({
      body: { error: 'Incorrect API key provided: Bearer sk-relay-secret-98765' },
    }));
    const runner = createHttpRunner({
      url: endpoint.url,
      headers: { authorization: 'Bearer sk-relay-secret-98765' },
    });
    expect(await runner.run(RUN)).toEqual({
      status: 'error',
      reason: 'the response has no "reply" string: Incorrect API key provided: ***',
    });
  });

  it('an unreachable endpoint is retryable', async () => {
    const result = await createHttpRunner({ url: await closedUrl() }).run(RUN);
    expect(result).toMatchObject({
      status: 'retry',
      reason: expect.stringMatching(/^unreachable/),
    });
  });

  it('a response slower than timeoutSeconds is a timeout and the call is cancelled', async () => {
    const endpoint = await stub(() => ({ body: { reply: 'late' }, delayMs: 4_000 }));
    const began = Date.now();
    const result = await createHttpRunner({ url: endpoint.url }).run({ ...RUN, timeoutSeconds: 1 });
    expect(result).toEqual({ status: 'timeout', reason: 'no reply within 1s' });
    expect(Date.now() - began).toBeLessThan(2_500);
    await waitFor('the call to be cancelled', () => endpoint.exchanges[0]?.aborted, 2_000);
  });
});

describe('openai runner', () => {
  it('speaks chat completions: path, key, mapped model, history as messages, reasoning effort, max tokens', async () => {
    const endpoint = await stub(() => ({ body: chatCompletion('  Two commits landed.  ') }));
    const runner = createOpenAiRunner({
      baseUrl: `${endpoint.url}/v1/`,
      apiKey: 'sk-abc',
      models: { 'openai/gpt-5-mini': 'gpt-5-mini-2025-08-07' },
      maxTokens: 256,
    });
    expect(await runner.run(RUN)).toEqual({ status: 'ok', reply: 'Two commits landed.' });
    const [exchange] = endpoint.exchanges;
    expect(exchange).toMatchObject({ method: 'POST', url: '/v1/chat/completions' });
    expect(exchange?.headers['authorization']).toBe('Bearer sk-abc');
    expect(exchange?.headers['content-type']).toBe('application/json');
    expect(exchange?.body).toEqual({
      model: 'gpt-5-mini-2025-08-07',
      messages: [
        { role: 'user', content: 'Earlier question' },
        { role: 'assistant', content: 'Earlier answer' },
        { role: 'user', content: 'What changed?' },
      ],
      reasoning_effort: 'low',
      max_completion_tokens: 256,
    });
  });

  it.each<[string | undefined, string | undefined]>([
    [undefined, undefined],
    ['off', undefined],
    ['minimal', 'minimal'],
    ['low', 'low'],
    ['medium', 'medium'],
    ['high', 'high'],
    ['xhigh', 'high'],
  ])('thinking %s -> reasoning_effort %s', async (thinking, effort) => {
    const endpoint = await stub(() => ({ body: chatCompletion('ok') }));
    await createOpenAiRunner({ baseUrl: endpoint.url }).run({ ...RUN, thinking: thinking || null });
    expect(endpoint.exchanges[0]?.body['reasoning_effort']).toBe(effort);
  });

  it.each<[string, string | undefined, string | undefined, string]>([
    ['the model after the provider', 'ollama/llama3.2', undefined, 'llama3.2'],
    ['the agent default when the run names none', undefined, 'openai/gpt-4.1', 'gpt-4.1'],
    ['a built-in default without either', undefined, undefined, 'gpt-5-mini'],
  ])('model: %s', async (_name, model, defaultModel, expected) => {
    const endpoint = await stub(() => ({ body: chatCompletion('ok') }));
    await createOpenAiRunner({
      baseUrl: endpoint.url,
      ...(defaultModel && { defaultModel }),
    }).run({ ...RUN, model: model ?? null });
    expect(endpoint.exchanges[0]?.body['model']).toBe(expected);
    expect(endpoint.exchanges[0]?.headers['authorization']).toBeUndefined();
  });

  it.each<[string, StubReply, Record<string, unknown>]>([
    [
      '429 with Retry-After',
      {
        status: 429,
        headers: { 'retry-after': '7' },
        body: { error: { message: 'Rate limit reached', type: 'rate_limit_exceeded' } },
      },
      { status: 'retry', reason: expect.stringContaining('HTTP 429'), retryAfterMs: 7000 },
    ],
    [
      '500',
      { status: 500, body: { error: { message: 'server error' } } },
      { status: 'retry', reason: expect.stringContaining('HTTP 500') },
    ],
    [
      '401 (final)',
      { status: 401, body: { error: { message: 'Incorrect API key provided' } } },
      { status: 'error', reason: expect.stringContaining('Incorrect API key provided') },
    ],
    [
      'no choices',
      { body: { choices: [] } },
      { status: 'error', reason: 'the response has no message content' },
    ],
    [
      'a 200 carrying an error object (a proxy that answers errors with 200)',
      { body: { error: { message: 'upstream model overloaded', code: 502 } } },
      {
        status: 'error',
        reason: 'the response has no message content: upstream model overloaded',
      },
    ],
    [
      'content as an array of parts: the text parts are the reply, a reasoning part is not',
      {
        body: {
          choices: [
            {
              message: {
                role: 'assistant',
                content: [
                  { type: 'thinking', thinking: [{ type: 'text', text: 'hidden reasoning' }] },
                  { type: 'text', text: 'The disk ' },
                  { type: 'text', text: 'is full.' },
                ],
              },
            },
          ],
        },
      },
      { status: 'ok', reply: 'The disk is full.' },
    ],
    [
      'content as an array without a text part',
      { body: { choices: [{ message: { content: [{ type: 'image_url', image_url: {} }, 7] } }] } },
      { status: 'error', reason: 'the response has no message content' },
    ],
    [
      'a refusal instead of content',
      {
        body: {
          choices: [
            { message: { role: 'assistant', content: null, refusal: "I can't help with that." } },
          ],
        },
      },
      {
        status: 'error',
        reason: "the response has no message content: refused: I can't help with that.",
      },
    ],
  ])('%s', async (_name, reply, expected) => {
    const endpoint = await stub(() => reply);
    expect(await createOpenAiRunner({ baseUrl: endpoint.url }).run(RUN)).toEqual(expected);
  });

  it('a shutdown while the call runs means the work did not happen', async () => {
    const endpoint = await stub(() => ({ body: chatCompletion('late'), delayMs: 4_000 }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const result = await createOpenAiRunner({ baseUrl: endpoint.url }).run(RUN, {
      signal: controller.signal,
    });
    expect(result).toEqual({ status: 'retry', reason: 'interrupted by shutdown' });
  });
});

/** hookgate with the runtime on: agent `main` on an http runner, `ops` on an openai runner. */
async function hookgate(endpoint: Stub): Promise<{ server: TestServer; dataDir: string }> {
  const { dir, cleanup } = tempDir('hookgate-runners-');
  const server = await startTestServer(
    {
      hooks: { allowRequestSessionKey: true },
      agents: {
        defaults: { timeoutSeconds: 10 },
        list: [
          {
            id: 'main',
            default: true,
            runner: { kind: 'http', url: `${endpoint.url}/run`, headers: { 'x-relay': 'abc' } },
          },
          {
            id: 'ops',
            model: 'openai/gpt-5-mini',
            runner: { kind: 'openai', baseUrl: `${endpoint.url}/v1`, apiKeyEnv: KEY_ENV },
          },
        ],
      },
      runtime: {
        retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 5_000 },
        heartbeat: { every: 'off' },
      },
    },
    { dataDir: dir, runtime: true },
  ).catch((err: unknown) => {
    cleanup();
    throw err;
  });
  servers.push({ server, cleanup });
  return { server, dataDir: dir };
}

async function accept(server: TestServer, body: Record<string, unknown>): Promise<string> {
  const res = await server.post('agent', { wakeMode: 'next-heartbeat', deliver: false, ...body });
  const json = (await res.json()) as { runId: string };
  expect(res.status).toBe(200);
  return json.runId;
}

describe('retries through hookgate', () => {
  it('http runner: 503 twice then 200 -> done after 3 attempts, one summary', async () => {
    const endpoint = await stub((i) =>
      i < 2 ? { status: 503, body: 'busy' } : { body: { reply: 'relayed' } },
    );
    const { server, dataDir } = await hookgate(endpoint);
    const runId = await accept(server, { message: 'relay this', name: 'Relay' });
    const row = await waitForFinal(dataDir, runId);
    expect(row).toMatchObject({
      state: 'done',
      attempts: 3,
      outcome: { status: 'ok', reply: 'relayed' },
    });
    expect(endpoint.exchanges.map((e) => [e.url, e.body['runId'], e.headers['x-relay']])).toEqual([
      ['/run', runId, 'abc'],
      ['/run', runId, 'abc'],
      ['/run', runId, 'abc'],
    ]);
    expect(endpoint.exchanges[0]?.body).toMatchObject({
      kind: 'agent',
      agentId: 'main',
      timeoutSeconds: 10,
      history: [],
    });
    expect(summaries(dataDir, runId)).toEqual(['Hook Relay: relayed']);
  });

  it('http runner: 429 with Retry-After waits that long before the next attempt', async () => {
    const endpoint = await stub((i) =>
      i === 0
        ? { status: 429, headers: { 'retry-after': '1' }, body: 'slow down' }
        : { body: { reply: 'relayed' } },
    );
    const { server, dataDir } = await hookgate(endpoint);
    const runId = await accept(server, { message: 'relay this', name: 'Relay' });
    expect(await waitForFinal(dataDir, runId)).toMatchObject({ state: 'done', attempts: 2 });
    const [first, second] = endpoint.exchanges;
    expect((second?.at as number) - (first?.at as number)).toBeGreaterThanOrEqual(950);
  });

  it('http runner: always 503 -> dead after maxAttempts with one error summary, no further calls', async () => {
    const endpoint = await stub(() => ({ status: 503, body: 'busy' }));
    const { server, dataDir } = await hookgate(endpoint);
    const runId = await accept(server, { message: 'relay this', name: 'Relay' });
    const row = await waitForFinal(dataDir, runId);
    expect(row).toMatchObject({
      state: 'dead',
      attempts: 3,
      outcome: { status: 'error', reason: 'gave up after 3 attempts: HTTP 503: busy' },
    });
    expect(summaries(dataDir, runId)).toEqual([
      'Hook Relay (error): gave up after 3 attempts: HTTP 503: busy',
    ]);
    await sleep(300);
    expect(endpoint.exchanges).toHaveLength(3);
  });

  it('http runner: a 4xx answer is final after one attempt', async () => {
    const endpoint = await stub(() => ({ status: 422, body: 'no such tool' }));
    const { server, dataDir } = await hookgate(endpoint);
    const runId = await accept(server, { message: 'relay this', name: 'Relay' });
    expect(await waitForFinal(dataDir, runId)).toMatchObject({
      state: 'failed',
      attempts: 1,
      outcome: { status: 'error', reason: 'HTTP 422: no such tool' },
    });
    expect(summaries(dataDir, runId)).toEqual(['Hook Relay (error): HTTP 422: no such tool']);
  });

  it('http runner: a 200 carrying an error object fails once, for good, its error in the run and the summary', async () => {
    const endpoint = await stub(() => ({
      body: { error: { message: 'quota exceeded for this project' } },
    }));
    const { server, dataDir } = await hookgate(endpoint);
    const runId = await accept(server, { message: 'relay this', name: 'Relay' });
    const reason = 'the response has no "reply" string: quota exceeded for this project';
    expect(await waitForFinal(dataDir, runId)).toMatchObject({
      state: 'failed',
      attempts: 1,
      outcome: { status: 'error', reason },
    });
    expect(summaries(dataDir, runId)).toEqual([`Hook Relay (error): ${reason}`]);
  });

  it('openai runner: a turn with model and thinking, then one with the session history', async () => {
    const endpoint = await stub((i) => ({ body: chatCompletion(i === 0 ? 'First.' : 'Second.') }));
    const { server, dataDir } = await hookgate(endpoint);
    const first = await accept(server, {
      message: 'Triage the alert',
      name: 'Ops',
      agentId: 'ops',
      sessionKey: 'hook:ops-1',
      model: 'openai/gpt-4.1',
      thinking: 'medium',
    });
    expect(await waitForFinal(dataDir, first)).toMatchObject({
      state: 'done',
      outcome: { reply: 'First.' },
    });
    const second = await accept(server, {
      message: 'Any update?',
      agentId: 'ops',
      sessionKey: 'hook:ops-1',
    });
    expect(await waitForFinal(dataDir, second)).toMatchObject({ state: 'done' });

    const [one, two] = endpoint.exchanges;
    expect(one?.url).toBe('/v1/chat/completions');
    expect(one?.headers['authorization']).toBe('Bearer sk-test-0123456789');
    expect(one?.body).toMatchObject({ model: 'gpt-4.1', reasoning_effort: 'medium' });
    const messages = one?.body['messages'] as Array<{ role: string; content: string }>;
    expect(messages).toHaveLength(1);
    expect(unwrap(messages[0]?.content as string).content).toBe('Triage the alert');
    // The agent's default model, no effort, and the first turn as history.
    expect(two?.body['model']).toBe('gpt-5-mini');
    expect(two?.body['reasoning_effort']).toBeUndefined();
    expect((two?.body['messages'] as unknown[] | undefined)?.slice(0, 2)).toEqual([
      { role: 'user', content: messages[0]?.content },
      { role: 'assistant', content: 'First.' },
    ]);
    expect(summaries(dataDir, first)).toEqual(['Hook Ops: First.']);
  });

  it('openai runner: 429 with Retry-After is honoured, then the turn completes', async () => {
    const endpoint = await stub((i) =>
      i === 0
        ? { status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'slow' } } }
        : { body: chatCompletion('Done now.') },
    );
    const { server, dataDir } = await hookgate(endpoint);
    const runId = await accept(server, { message: 'go', agentId: 'ops', name: 'Ops' });
    expect(await waitForFinal(dataDir, runId)).toMatchObject({
      state: 'done',
      attempts: 2,
      outcome: { reply: 'Done now.' },
    });
    const [first, second] = endpoint.exchanges;
    expect((second?.at as number) - (first?.at as number)).toBeGreaterThanOrEqual(950);
    expect(summaries(dataDir, runId)).toEqual(['Hook Ops: Done now.']);
  });

  it('openai runner: a completion slower than timeoutSeconds is cancelled and final (timeout)', async () => {
    const endpoint = await stub(() => ({ body: chatCompletion('late'), delayMs: 4_000 }));
    const { server, dataDir } = await hookgate(endpoint);
    const runId = await accept(server, {
      message: 'think hard',
      agentId: 'ops',
      name: 'Ops',
      timeoutSeconds: 1,
    });
    // No tighter bound than the default: a late reply would make it done, not a timeout.
    expect(await waitForFinal(dataDir, runId)).toMatchObject({
      state: 'failed',
      attempts: 1,
      outcome: { status: 'timeout', reason: 'no reply within 1s' },
    });
    expect(summaries(dataDir, runId)).toEqual(['Hook Ops (timeout): no reply within 1s']);
    await waitFor('the call to be cancelled', () => endpoint.exchanges[0]?.aborted, 2_000);
    await sleep(200);
    expect(endpoint.exchanges).toHaveLength(1);
  });
});

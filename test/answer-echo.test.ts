/**
 * Outside services that echo the credentials hookgate sent them, through a
 * running hookgate: a runner's endpoint answering 401 with the API key, one
 * answering 403 with its configured header, a command runner printing its
 * environment on stderr, a channel API answering with the token and 500 KB
 * in its error id. None of it reaches a log line, the stored run, the
 * delivery record or the summary the next heartbeat prompt is built from.
 */
import { openSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../engine/log.ts';
import { createCommandRunner } from '../engine/runtime/runners/command.ts';
import { createHttpRunner } from '../engine/runtime/runners/http.ts';
import type { RunRequest } from '../engine/runtime/runners/runner.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { readLogLines } from './helpers/log-lines.ts';
import {
  type Exchange,
  NODE_BINARY,
  query,
  type Stub,
  type StubReply,
  startStub,
  summaries,
  waitFor,
  waitForFinal,
} from './helpers/runtime.ts';

const KEY_ENV = 'HOOKGATE_TEST_ECHO_KEY';
const API_KEY = 'sk-live-TOPSECRET-abcdef';
const RELAY_KEY = 'relay-secret-XYZ123';
const MM_TOKEN = 'MM-SECRET-TOKEN-123';
// The longest log line an honest failure writes is far shorter.
const MAX_LOG_LINE = 4096;

const RUN: RunRequest = {
  kind: 'agent',
  runId: 'run-1',
  agentId: 'main',
  sessionKey: 'hook:1',
  message: 'hello',
  model: null,
  thinking: null,
  timeoutSeconds: 10,
  history: [],
};

const open: Array<{ server: TestServer; cleanup: () => void }> = [];
const stubs: Stub[] = [];
afterEach(async () => {
  for (const { server, cleanup } of open.splice(0)) {
    await server.stop();
    cleanup();
  }
  await Promise.all(stubs.splice(0).map((stub) => stub.close()));
  delete process.env[KEY_ENV];
});

async function stub(respond: (exchange: Exchange) => StubReply): Promise<Stub> {
  const started = await startStub((_, exchange) => respond(exchange));
  stubs.push(started);
  return started;
}

/** A hookgate with the runtime on, logging to a file; its log lines and data directory. */
async function hookgate(config: Record<string, unknown>) {
  const { dir, cleanup } = tempDir('hookgate-echo-');
  const logFile = path.join(dir, 'hookgate.log');
  const server = await startTestServer(
    {
      hooks: { allowRequestSessionKey: true },
      ...config,
      runtime: { retry: { maxAttempts: 1 }, heartbeat: { every: 'off' } },
    },
    { dataDir: dir, runtime: true, logger: createLogger('info', openSync(logFile, 'a')) },
  );
  open.push({ server, cleanup });
  return { server, dataDir: dir, logLines: () => readLogLines(logFile) };
}

async function accept(server: TestServer, body: Record<string, unknown>): Promise<string> {
  const res = await server.post('agent', { wakeMode: 'next-heartbeat', ...body });
  expect(res.status).toBe(200);
  return ((await res.json()) as { runId: string }).runId;
}

describe('outside answers that echo our credentials', () => {
  it('a runner answering 401 with the API key echoed, another 403 with its header: neither secret appears in a log line, run reason or summary', async () => {
    process.env[KEY_ENV] = API_KEY;
    const endpoint = await stub((exchange) =>
      exchange.url.startsWith('/v1/')
        ? {
            status: 401,
            body: {
              error: { message: `Incorrect API key provided: ${exchange.headers.authorization}` },
            },
          }
        : { status: 403, body: `forbidden for credentials ${exchange.headers['x-api-key']}` },
    );
    const { server, dataDir, logLines } = await hookgate({
      agents: {
        defaults: { runner: { kind: 'openai', baseUrl: `${endpoint.url}/v1`, apiKeyEnv: KEY_ENV } },
        list: [
          { id: 'main', default: true },
          {
            id: 'relay',
            runner: {
              kind: 'http',
              url: `${endpoint.url}/relay`,
              headers: { 'x-api-key': RELAY_KEY },
            },
          },
        ],
      },
    });
    const openai = await accept(server, { message: 'hello', deliver: false, name: 'Ask' });
    const relay = await accept(server, {
      message: 'hello',
      deliver: false,
      agentId: 'relay',
      name: 'Relay',
    });
    expect(await waitForFinal(dataDir, openai)).toMatchObject({
      state: 'failed',
      outcome: { reason: 'HTTP 401: {"error":{"message":"Incorrect API key provided: ***"}}' },
    });
    expect(await waitForFinal(dataDir, relay)).toMatchObject({
      state: 'failed',
      outcome: { reason: 'HTTP 403: forbidden for credentials ***' },
    });
    // Both endpoints did receive the secrets: the echo was real.
    expect(
      endpoint.exchanges.map((e) => e.headers.authorization ?? e.headers['x-api-key']),
    ).toEqual(expect.arrayContaining([`Bearer ${API_KEY}`, RELAY_KEY]));
    const stored = [
      ...summaries(dataDir, openai),
      ...summaries(dataDir, relay),
      ...query(dataDir, 'SELECT outcome FROM actions').map((row) => String(row['outcome'])),
    ];
    expect(stored.length).toBeGreaterThanOrEqual(4);
    const lines = await waitFor('both failures logged', () => {
      const failed = logLines().filter((line) => line['msg'] === 'agent run failed');
      return failed.length === 2 ? logLines() : undefined;
    });
    for (const text of [...stored, ...lines.map((line) => JSON.stringify(line))]) {
      expect(text).not.toContain(API_KEY);
      expect(text).not.toContain(RELAY_KEY);
    }
  });

  it('a command runner that prints its environment on stderr as it fails: the configured secret is blanked in the run reason', async () => {
    const script =
      "console.error('starting with AGENT_KEY=' + process.env.AGENT_KEY); process.exit(2)";
    const { server, dataDir } = await hookgate({
      agents: {
        defaults: {
          runner: {
            kind: 'command',
            argv: [NODE_BINARY, '-e', script],
            env: { AGENT_KEY: API_KEY, DEBUG: '1' },
          },
        },
      },
    });
    const runId = await accept(server, { message: 'hello', deliver: false, name: 'Cmd' });
    expect(await waitForFinal(dataDir, runId)).toMatchObject({
      state: 'failed',
      outcome: { reason: 'exit 2: starting with AGENT_KEY=***' },
    });
    expect(summaries(dataDir, runId)).toEqual([
      'Hook Cmd (error): exit 2: starting with AGENT_KEY=***',
    ]);
  });

  it('a command runner whose stderr repeats its key until the kept tail starts inside one: no end of the key is shown', async () => {
    // 66 characters, 70 times, then 37: the last 4096 characters kept start 33 into a key.
    const key = `k-${'0123456789abcdef'.repeat(4)}`;
    const script = `process.stderr.write(process.env.AGENT_KEY.repeat(70) + '.'.repeat(34) + 'end'); process.exit(1)`;
    const { dir, cleanup } = tempDir('hookgate-echo-cmd-');
    try {
      const runner = createCommandRunner({
        argv: [NODE_BINARY, '-e', script],
        cwd: dir,
        env: { AGENT_KEY: key },
      });
      const result = await runner.run(RUN);
      expect(result).toMatchObject({ status: 'error' });
      const reason = (result as { reason: string }).reason;
      expect(reason).toMatch(/^exit 1: .*\*\*\*\.{34}end$/);
      // Any 12 characters of the key would be a piece of it.
      for (let i = 0; i + 12 <= key.length; i++) expect(reason).not.toContain(key.slice(i, i + 12));
    } finally {
      cleanup();
    }
  });

  it('a Mattermost answer with the token and 500 KB in its error id: the delivery reason is short and tokenless, no log line is huge', async () => {
    const product = await stub((exchange) =>
      exchange.url.startsWith('/run')
        ? { body: { reply: 'hello there' } }
        : {
            status: 400,
            body: {
              id: `api.context.invalid ${exchange.headers.authorization} ${'A'.repeat(500_000)}`,
              message: `bad ${exchange.headers.authorization}`,
            },
          },
    );
    const { server, dataDir, logLines } = await hookgate({
      agents: { defaults: { runner: { kind: 'http', url: `${product.url}/run` } } },
      channels: { mattermost: { url: `${product.url}/mm`, token: MM_TOKEN } },
    });
    const runId = await accept(server, {
      message: 'hi',
      deliver: true,
      channel: 'mattermost',
      to: 'abcdefghijklmnopqrstuvwxyz',
      name: 'Post',
    });
    await waitForFinal(dataDir, runId);
    const [delivery] = query(
      dataDir,
      'SELECT state, error FROM deliveries WHERE source_id = ?',
      runId,
    );
    expect(delivery).toMatchObject({
      state: 'failed',
      error: 'Mattermost HTTP 400: request refused (bad Bearer ***)',
    });
    expect(product.exchanges.some((e) => e.headers.authorization === `Bearer ${MM_TOKEN}`)).toBe(
      true,
    );
    const lines = await waitFor('the failed delivery logged', () => {
      const all = logLines();
      return all.some((line) => line['msg'] === 'delivery failed') ? all : undefined;
    });
    const stored = [
      ...summaries(dataDir, runId),
      ...query(dataDir, 'SELECT outcome FROM actions').map((row) => String(row['outcome'])),
    ];
    for (const text of [...stored, ...lines.map((line) => JSON.stringify(line))]) {
      expect(text).not.toContain(MM_TOKEN);
      expect(text.length).toBeLessThan(MAX_LOG_LINE);
    }
  });

  it('an http runner whose URL path carries a token, answered by an Express-style 404 that echoes the path: the token appears in no log line, run reason or summary', async () => {
    const token = 'Zx9kQ2mP7vL4sT8wR1nB';
    const endpoint = await stub((exchange) => ({
      status: 404,
      body: `<pre>Cannot POST ${exchange.url}</pre>`,
    }));
    const { server, dataDir, logLines } = await hookgate({
      agents: { defaults: { runner: { kind: 'http', url: `${endpoint.url}/agent/${token}/run` } } },
    });
    const runId = await accept(server, { message: 'hello', deliver: false, name: 'Path' });
    expect(await waitForFinal(dataDir, runId)).toMatchObject({
      state: 'failed',
      outcome: { reason: 'HTTP 404: <pre>Cannot POST /agent/***/run</pre>' },
    });
    expect(endpoint.exchanges[0]?.url).toBe(`/agent/${token}/run`);
    const lines = await waitFor('the failure logged', () => {
      const all = logLines();
      return all.some((line) => line['msg'] === 'agent run failed') ? all : undefined;
    });
    const stored = [
      ...summaries(dataDir, runId),
      ...query(dataDir, 'SELECT outcome FROM actions').map((row) => String(row['outcome'])),
    ];
    expect(stored.length).toBeGreaterThanOrEqual(2);
    for (const text of [...stored, ...lines.map((line) => JSON.stringify(line))])
      expect(text).not.toContain(token);
  });

  it('an http runner with short routing headers (`2`, `eu`) and a short API key header: its failure reason stays readable, the key is still blanked', async () => {
    const endpoint = await stub((exchange) => ({
      status: 503,
      body: `upstream eu-west-2 overloaded, retry in 20s (request 42), key ${exchange.headers['x-api-key']}`,
    }));
    const runner = createHttpRunner({
      url: `${endpoint.url}/run`,
      headers: { 'openai-version': '2', 'x-region': 'eu', 'x-api-key': 'k1' },
    });
    expect(await runner.run(RUN)).toMatchObject({
      status: 'retry',
      reason: 'HTTP 503: upstream eu-west-2 overloaded, retry in 20s (request 42), key ***',
    });
    expect(endpoint.exchanges[0]?.headers['x-region']).toBe('eu');
  });
});

// The key an http runner sends as `Authorization: Bearer <key>`, with the characters encodings change.
const ENCODED_KEY = 'sk-AbC/dEf+GhI=JkLmNoP1234';
const percent = (s: string) => encodeURIComponent(s);

describe('a runner answering 401 with its key echoed in an encoding', () => {
  it.each([
    [
      'JSON with escaped slashes, as PHP writes it',
      (k: string) => `{"error":"bad key ${k.replaceAll('/', '\\/')}"}`,
      '{"error":"bad key ***"}',
    ],
    [
      'JSON \\u escapes',
      (k: string) =>
        `{"e":"${[...k].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"}`,
      '{"e":"***"}',
    ],
    [
      'lowercase percent hex',
      (k: string) => `bad key ${percent(k).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())}`,
      'bad key ***',
    ],
    [
      'percent-encoded twice (a URL quoted in a URL)',
      (k: string) => `next=${percent(`https://h/?key=${percent(k)}`)}`,
      'next=https%3A%2F%2Fh%2F%3Fkey%3D***',
    ],
    [
      'HTML numeric entities',
      (k: string) => `<p>bad key ${k.replaceAll('+', '&#43;').replaceAll('/', '&#x2F;')}</p>`,
      '<p>bad key ***</p>',
    ],
    [
      'HTML named entities',
      (k: string) =>
        `<p>bad key ${k.replaceAll('+', '&plus;').replaceAll('/', '&sol;').replaceAll('=', '&equals;')}</p>`,
      '<p>bad key ***</p>',
    ],
    ['broken by a newline', (k: string) => `key: ${k.slice(0, 10)}\n${k.slice(10)}`, 'key: ***'],
    ['upper-cased', (k: string) => `BAD KEY ${k.toUpperCase()}`, 'BAD KEY ***'],
    [
      'with a zero-width space, a soft hyphen and a word joiner inside',
      (k: string) =>
        `key ${k.slice(0, 4)}\u200b${k.slice(4, 8)}&shy;${k.slice(8, 12)}\u2060${k.slice(12)}`,
      'key ***',
    ],
  ])('a key echoed as %s is blanked in the reason', async (_, spell, reason) => {
    const endpoint = await stub(() => ({ status: 401, body: spell(ENCODED_KEY) }));
    const runner = createHttpRunner({
      url: `${endpoint.url}/run`,
      headers: { authorization: `Bearer ${ENCODED_KEY}` },
    });
    expect(await runner.run(RUN)).toEqual({ status: 'error', reason: `HTTP 401: ${reason}` });
  });
});

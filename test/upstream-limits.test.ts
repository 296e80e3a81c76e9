/**
 * Upstream answers are read under a byte cap: agent runners (http, openai,
 * command stdout and stderr), channel APIs and the Teams token endpoint. Each
 * attack is a local upstream that streams an "endless" (800 MB) answer; the
 * answer must be cut at the cap (the stand-in sees the connection go away
 * long before it could send it all, so nothing was buffered), and the
 * attempt must end as a final failure: never "unreachable", never run again.
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import type { ChannelAdapter } from '../engine/delivery/adapter.ts';
import { CHANNEL_ANSWER_MAX_BYTES } from '../engine/delivery/adapters/http-call.ts';
import { ADAPTERS } from '../engine/delivery/registry.ts';
import { outboundCall } from '../engine/outbound/http-client.ts';
import { createCommandRunner } from '../engine/runtime/runners/command.ts';
import { createHttpRunner } from '../engine/runtime/runners/http.ts';
import { createOpenAiRunner } from '../engine/runtime/runners/openai.ts';
import type { RunRequest } from '../engine/runtime/runners/runner.ts';
import { type Flood, type FloodOptions, startFlood } from './helpers/flood.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import {
  isRunning,
  NODE,
  sleep,
  summaries,
  startStub,
  type Stub,
  waitFor,
  waitForFinal,
} from './helpers/runtime.ts';
import { type StandIn, startStandIn } from './helpers/stand-in.ts';

const CAP = 64 * 1024;
// What may sit in socket buffers on loopback when the client hangs up; far below 800 MB.
const MARGIN = 32 * 1024 * 1024;
// undici hands the body over in socket reads of at most 64 KiB.
const ONE_CHUNK = 64 * 1024;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function flood(options: FloodOptions = {}): Promise<Flood> {
  const started = await startFlood(options);
  cleanups.push(() => started.close());
  return started;
}

/** Wait until the flood's only exchange is over, then check it was cut, not read to the end. */
async function expectCut(endpoint: Flood, cap: number): Promise<void> {
  await waitFor('the flooded exchange to end', () => endpoint.requests[0]?.closed, 30_000);
  const [exchange] = endpoint.requests;
  expect(exchange?.aborted).toBe(true);
  expect(exchange?.written).toBeLessThan(cap + MARGIN);
}

const RUN: RunRequest = {
  kind: 'agent',
  runId: 'run-1',
  agentId: 'main',
  sessionKey: 'hook:r-1',
  message: 'What changed?',
  model: null,
  thinking: null,
  timeoutSeconds: 30,
  history: [],
};

/**
 * A local upstream whose answer has 2 MB of headers (or, with `trailers`, a 200 whose
 * chunked body ends in 2 MB of trailers); `requests` counts the exchanges it saw.
 */
async function headerFlood(trailers = false): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const server = createNetServer((socket) => {
    socket.on('error', () => undefined);
    socket.once('data', () => {
      requests++;
      socket.write(
        trailers
          ? 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\ne\r\n{"reply":"ok"}\r\n0\r\n'
          : 'HTTP/1.1 200 OK\r\n',
      );
      for (let i = 0; i < 2000 && !socket.destroyed; i++)
        socket.write(`X-Filler-${i}: ${'a'.repeat(1000)}\r\n`);
      socket.end('\r\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests: () => requests };
}

describe('the outbound client', () => {
  it('an endless answer is cut at the cap, holding at most the cap plus one chunk', async () => {
    const endpoint = await flood();
    const result = await outboundCall(endpoint.url, {
      headers: {},
      body: '{}',
      timeoutMs: 30_000,
      maxBytes: CAP,
    });
    expect(result).toMatchObject({ kind: 'too_large', status: 200, maxBytes: CAP });
    const received = (result as { receivedBytes: number }).receivedBytes;
    expect(received).toBeGreaterThan(CAP);
    expect(received).toBeLessThanOrEqual(CAP + ONE_CHUNK);
    await expectCut(endpoint, CAP);
  });

  it('an answer that declares 800 MB in Content-Length is refused before its body is read', async () => {
    const endpoint = await flood({ declaredLength: 800 * 1024 * 1024 });
    const result = await outboundCall(endpoint.url, {
      headers: {},
      body: '{}',
      timeoutMs: 30_000,
      maxBytes: CAP,
    });
    expect(result).toMatchObject({ kind: 'too_large', receivedBytes: 0 });
    await expectCut(endpoint, CAP);
  });

  it('an answer of exactly the cap is read whole', async () => {
    const endpoint = await flood({ totalBytes: CAP });
    const result = await outboundCall(endpoint.url, {
      headers: {},
      timeoutMs: 30_000,
      maxBytes: CAP,
    });
    expect(result).toMatchObject({ kind: 'answer', status: 200 });
    expect((result as { text: string }).text).toHaveLength(CAP);
  });
});

describe('runners on their own', () => {
  it.each<[string, FloodOptions]>([
    ['an endless 200 answer', { prefix: '{"reply":"' }],
    ['an endless 503 answer', { status: 503 }],
    ['an endless 429 answer', { status: 429 }],
    ['a 200 answer declaring 800 MB', { declaredLength: 800 * 1024 * 1024 }],
  ])('http runner: %s is a final error naming the cap', async (_name, options) => {
    const endpoint = await flood(options);
    const result = await createHttpRunner({ url: endpoint.url, maxReplyBytes: CAP }).run(RUN);
    expect(result).toEqual({
      status: 'error',
      reason: `the runner's answer exceeded ${CAP} bytes (runtime.maxReplyBytes)`,
    });
    await expectCut(endpoint, CAP);
  });

  it.each([
    ['2 MB of headers', false],
    ['2 MB of trailers', true],
  ])(
    'http runner: an answer with %s is a final error, never "unreachable"',
    async (_name, trailers) => {
      const endpoint = await headerFlood(trailers);
      const result = await createHttpRunner({ url: endpoint.url, maxReplyBytes: CAP }).run(RUN);
      expect(result).toEqual({
        status: 'error',
        reason: "the runner's answer headers are too large",
      });
      expect(endpoint.requests()).toBe(1);
    },
  );

  it('openai runner: an endless completion is a final error naming the cap', async () => {
    const endpoint = await flood({ prefix: '{"choices":[{"message":{"content":"' });
    const runner = createOpenAiRunner({ baseUrl: endpoint.url, maxReplyBytes: CAP });
    expect(await runner.run(RUN)).toEqual({
      status: 'error',
      reason: `the runner's answer exceeded ${CAP} bytes (runtime.maxReplyBytes)`,
    });
    await expectCut(endpoint, CAP);
  });

  it.each<[string, number, Record<string, unknown>]>([
    ['200', 200, { status: 'error' }],
    ['422', 422, { status: 'error' }],
    ['503', 503, { status: 'retry' }],
  ])(
    'http runner: a %s answer that breaks off midway is judged by its status, never "unreachable"',
    async (_name, status, expected) => {
      const endpoint = await flood({
        status,
        prefix: '{"reply":"',
        totalBytes: 1000,
        breakOff: true,
      });
      const result = await createHttpRunner({ url: endpoint.url, maxReplyBytes: CAP }).run(RUN);
      expect(result).toMatchObject(expected);
      const reason = (result as { reason: string }).reason;
      expect(reason).toMatch(new RegExp(`^HTTP ${status}: the answer broke off`));
    },
  );

  it('http runner: a reply just under the cap is taken whole', async () => {
    const reply = 'x'.repeat(CAP - 100);
    const endpoint = await startStub(() => ({ body: { reply } }));
    cleanups.push(() => endpoint.close());
    const result = await createHttpRunner({ url: endpoint.url, maxReplyBytes: CAP }).run(RUN);
    expect(result).toEqual({ status: 'ok', reply });
  });

  it('command runner: a stdout flood ends the process group and is a final error', async () => {
    const { dir, cleanup } = tempDir('hookgate-flood-');
    cleanups.push(cleanup);
    const script = writeScript(dir, 'stdout-flood.mjs', STDOUT_FLOOD);
    let pgid = 0;
    const runner = createCommandRunner({ argv: [NODE, script], cwd: dir, maxReplyBytes: CAP });
    const result = await runner.run(RUN, {
      onSpawn: (pid) => {
        pgid = pid;
      },
    });
    expect(result).toEqual({
      status: 'error',
      reason: `the runner's answer exceeded ${CAP} bytes (runtime.maxReplyBytes)`,
    });
    await waitFor('the flooding process to be gone', () => !isRunning(pgid), 30_000);
  });

  it('command runner: a stderr flood keeps only a bounded tail for the reason', async () => {
    const { dir, cleanup } = tempDir('hookgate-flood-');
    cleanups.push(cleanup);
    const script = writeScript(dir, 'stderr-flood.mjs', STDERR_FLOOD);
    const runner = createCommandRunner({ argv: [NODE, script], cwd: dir, maxReplyBytes: CAP });
    const result = await runner.run(RUN);
    expect(result.status).toBe('error');
    const reason = (result as { reason: string }).reason;
    expect(reason.length).toBeLessThan(600);
    expect(reason).toMatch(/^exit 3: …/);
    expect(reason.endsWith('the last words')).toBe(true);
  });
});

// Writes 64 KiB blocks to stdout as fast as the pipe takes them, for ever.
const STDOUT_FLOOD = `
import { appendFileSync } from 'node:fs';
if (process.env.RECORD) appendFileSync(process.env.RECORD, process.pid + '\\n');
const block = Buffer.alloc(65536, 'x');
const pump = () => { while (process.stdout.write(block)); process.stdout.once('drain', pump); };
pump();
`;

// 32 MiB of stderr, then a last line and exit 3.
const STDERR_FLOOD = `
const block = Buffer.alloc(65536, 'e');
let left = 512;
const pump = () => {
  while (left > 0) { left--; if (!process.stderr.write(block)) { process.stderr.once('drain', pump); return; } }
  process.stderr.write('\\nthe last words\\n', () => process.exit(3));
};
pump();
`;

function writeScript(dir: string, name: string, source: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, source);
  return file;
}

/** hookgate with the runtime on, runner answers capped at CAP, up to 3 attempts. */
async function hookgate(agents: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const { dir, cleanup } = tempDir('hookgate-upstream-');
  const server = await startTestServer(
    {
      agents,
      runtime: {
        maxReplyBytes: CAP,
        retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 1_000 },
        heartbeat: { every: 'off' },
      },
      ...extra,
    },
    { dataDir: dir, runtime: true },
  ).catch((err: unknown) => {
    cleanup();
    throw err;
  });
  cleanups.push(cleanup, () => server.stop());
  return { server, dataDir: dir };
}

async function accept(server: TestServer, body: Record<string, unknown>): Promise<string> {
  const res = await server.post('agent', { wakeMode: 'next-heartbeat', deliver: false, ...body });
  expect(res.status).toBe(200);
  return ((await res.json()) as { runId: string }).runId;
}

const TOO_LARGE = `the runner's answer exceeded ${CAP} bytes (runtime.maxReplyBytes)`;

describe('through hookgate: an oversized answer fails the turn once', () => {
  it('an 800 MB runner answer is cut at the cap and the turn is not run again (http runner)', async () => {
    const endpoint = await flood({ prefix: '{"reply":"' });
    const { server, dataDir } = await hookgate({
      list: [{ id: 'main', default: true, runner: { kind: 'http', url: endpoint.url } }],
    });
    const runId = await accept(server, { message: 'flood me', name: 'Flood' });
    expect(await waitForFinal(dataDir, runId, 30_000)).toMatchObject({
      state: 'failed',
      attempts: 1,
      outcome: { status: 'error', reason: TOO_LARGE },
    });
    await expectCut(endpoint, CAP);
    expect(summaries(dataDir, runId)).toEqual([`Hook Flood (error): ${TOO_LARGE}`]);
    await sleep(300);
    expect(endpoint.requests).toHaveLength(1);
  });

  it('an 800 MB runner answer is cut at the cap and the turn is not run again (openai runner)', async () => {
    const endpoint = await flood({ prefix: '{"choices":[{"message":{"content":"' });
    const { server, dataDir } = await hookgate({
      list: [{ id: 'main', default: true, runner: { kind: 'openai', baseUrl: endpoint.url } }],
    });
    const runId = await accept(server, { message: 'flood me', name: 'Flood' });
    expect(await waitForFinal(dataDir, runId, 30_000)).toMatchObject({
      state: 'failed',
      attempts: 1,
      outcome: { status: 'error', reason: TOO_LARGE },
    });
    await expectCut(endpoint, CAP);
    await sleep(300);
    expect(endpoint.requests).toHaveLength(1);
  });

  it('an endless command runner stdout is cut at the cap and the turn is not run again', async () => {
    const { dir, cleanup } = tempDir('hookgate-flood-');
    cleanups.push(cleanup);
    const script = writeScript(dir, 'stdout-flood.mjs', STDOUT_FLOOD);
    const record = path.join(dir, 'starts.txt');
    appendFileSync(record, '');
    const { server, dataDir } = await hookgate({
      list: [
        {
          id: 'main',
          default: true,
          runner: { kind: 'command', argv: [NODE, script], env: { RECORD: record } },
        },
      ],
    });
    const runId = await accept(server, { message: 'flood me', name: 'Flood' });
    expect(await waitForFinal(dataDir, runId, 30_000)).toMatchObject({
      state: 'failed',
      attempts: 1,
      outcome: { status: 'error', reason: TOO_LARGE },
    });
    const starts = () => readFileSync(record, 'utf8').split('\n').filter(Boolean).map(Number);
    await waitFor(
      'the flooding runner to be gone',
      () => !isRunning(starts()[0] as number),
      30_000,
    );
    await sleep(300);
    expect(starts()).toHaveLength(1);
  });
});

const TO: Record<string, string> = {
  whatsapp: '+15551234567',
  telegram: '123456789',
  discord: '123456789012345678',
  slack: 'C0123456789',
  mattermost: 'abcdefghijklmnopqrstuvwxyz',
  signal: '+15557654321',
  imessage: '+15550001234',
  msteams: '19:abc-conversation@thread.skype',
};

/** Settings pointing a channel's product API at `base` (Teams: its token endpoint at `tokenBase`). */
function channelSettings(id: string, base: string, tokenBase: string): Record<string, unknown> {
  const common = { timeoutMs: 30_000 };
  const all: Record<string, Record<string, unknown>> = {
    whatsapp: { phoneNumberId: '1029384756', accessToken: 'wa-secret', apiVersion: 'v23.0' },
    telegram: { botToken: '123456:tg-secret', baseUrl: base },
    discord: { botToken: 'dc-secret', baseUrl: base },
    slack: { botToken: 'xoxb-sl-secret', baseUrl: base },
    mattermost: { url: base, token: 'mm-secret' },
    signal: { url: base, number: '+15550001111' },
    imessage: { url: base, password: 'bb-secret' },
    msteams: {
      appId: 'app',
      appPassword: 'teams-secret',
      tenantId: 'tenant',
      serviceUrl: base,
      tokenUrl: `${tokenBase}/token`,
    },
  };
  return { ...common, baseUrl: base, ...all[id] };
}

/** A stand-in for Entra's token endpoint that always issues a token. */
async function tokenEndpoint(): Promise<StandIn> {
  const standIn = await startStandIn(() => ({
    status: 200,
    body: { token_type: 'Bearer', expires_in: 3600, access_token: 'teams-access-token' },
  }));
  cleanups.push(() => standIn.close());
  return standIn;
}

describe('channel and token APIs', () => {
  it.each(Object.keys(ADAPTERS))(
    '%s: a channel API streaming an endless answer fails the part, not resent',
    async (id) => {
      const endpoint = await flood({ prefix: '{"ok":true,"result":{"message_id":1},"x":"' });
      const tokens = await tokenEndpoint();
      const factory = ADAPTERS[id] as (s: Record<string, unknown>) => ChannelAdapter;
      const adapter = factory(channelSettings(id, endpoint.url, tokens.url));
      const to = TO[id] as string;
      const result = await adapter.send(adapter.normaliseRecipient?.(to) ?? to, 'hello');
      expect(result).toMatchObject({ status: 'failed' });
      expect((result as { reason: string }).reason).toContain(
        `exceeded ${CHANNEL_ANSWER_MAX_BYTES} bytes`,
      );
      await expectCut(endpoint, CHANNEL_ANSWER_MAX_BYTES);
      expect(endpoint.requests).toHaveLength(1);
    },
  );

  it.each(Object.keys(ADAPTERS))(
    '%s: a channel API answering with 2 MB of headers fails the part, not resent',
    async (id) => {
      const endpoint = await headerFlood();
      const tokens = await tokenEndpoint();
      const factory = ADAPTERS[id] as (s: Record<string, unknown>) => ChannelAdapter;
      const adapter = factory(channelSettings(id, endpoint.url, tokens.url));
      const to = TO[id] as string;
      const result = await adapter.send(adapter.normaliseRecipient?.(to) ?? to, 'hello');
      expect(result).toMatchObject({ status: 'failed' });
      expect((result as { reason: string }).reason).toContain('headers too large');
      expect(endpoint.requests()).toBe(1);
    },
  );

  it('msteams: a token endpoint answering endlessly fails the send without posting', async () => {
    const tokenFlood = await flood({ prefix: '{"access_token":"' });
    const connector = await startStandIn(() => ({ status: 201, body: { id: 'a-1' } }));
    cleanups.push(() => connector.close());
    const adapter = ADAPTERS['msteams']?.(
      channelSettings('msteams', connector.url, tokenFlood.url),
    );
    const result = await adapter?.send(TO['msteams'] as string, 'hello');
    expect(result).toMatchObject({ status: 'failed' });
    const reason = (result as { reason: string }).reason;
    expect(reason).toMatch(/^Teams token request: /);
    expect(reason).toContain(`exceeded ${CHANNEL_ANSWER_MAX_BYTES} bytes`);
    expect(reason).not.toContain('teams-secret');
    await expectCut(tokenFlood, CHANNEL_ANSWER_MAX_BYTES);
    expect(connector.requests).toHaveLength(0);
  });

  it('through hookgate: a flooding channel API fails the delivery once and the turn is not run again', async () => {
    const endpoint = await flood({ prefix: '{"ok":true,"x":"' });
    const stub: Stub = await startStub(() => ({ body: { reply: 'the reply' } }));
    cleanups.push(() => stub.close());
    const { server, dataDir } = await hookgate(
      { list: [{ id: 'main', default: true, runner: { kind: 'http', url: stub.url } }] },
      { channels: { telegram: { botToken: '123456:tg-secret', baseUrl: endpoint.url } } },
    );
    const runId = await accept(server, {
      message: 'deliver me',
      name: 'Deliver',
      deliver: true,
      channel: 'telegram',
      to: '123456789',
    });
    const row = await waitForFinal(dataDir, runId, 30_000);
    expect(row.attempts).toBe(1);
    await expectCut(endpoint, CHANNEL_ANSWER_MAX_BYTES);
    const [summary] = summaries(dataDir, runId);
    expect(summary).toContain('[delivery failed:');
    expect(summary).toContain(`exceeded ${CHANNEL_ANSWER_MAX_BYTES} bytes`);
    await sleep(300);
    expect(endpoint.requests).toHaveLength(1);
    expect(stub.exchanges).toHaveLength(1);
  });
});

describe('runtime.maxReplyBytes', () => {
  const base = { hooks: { enabled: true, token: 'a-token-0123456789' } };
  const options = { baseDir: '/tmp', dataDir: '/tmp', env: {} };

  it('defaults to 1 MiB', () => {
    expect(resolveConfig(base, options).config.runtime.maxReplyBytes).toBe(1_048_576);
  });

  it.each([1023, 67_108_865, 2048.5])('refuses %j', (maxReplyBytes) => {
    expect(() => resolveConfig({ ...base, runtime: { maxReplyBytes } }, options)).toThrow(
      /runtime\.maxReplyBytes/,
    );
  });
});

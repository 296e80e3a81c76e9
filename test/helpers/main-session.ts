/**
 * A small world for the main-session tests: hookgate with the runtime on,
 * agents `main` (default, runs heartbeats) and `ops` on an http runner, and
 * Telegram and Slack, all served by one local stand-in whose runner answers
 * the test decides. Records what each agent was given and what each chat got.
 */
import { expect } from 'vitest';
import { SECURITY_NOTICE_ONCE } from '../../engine/safety.ts';
import { startTestServer, type TestServer, tempDir } from './hookgate.ts';
import { type Exchange, query, type Row, type Stub, type StubReply, startStub } from './runtime.ts';
import { storeOf } from './store-reads.ts';

export const OWNER_SLACK = 'C0OWNER0001';
export const PROMPT = 'Heartbeat: act on the events above, or reply HEARTBEAT_OK.';

/** What the runner endpoint got: the run's JSON (kind, agentId, sessionKey, message, history). */
export type RunInput = {
  kind: 'agent' | 'heartbeat';
  runId: string;
  agentId: string;
  sessionKey: string;
  message: string;
  history: Array<{ role: string; text: string }>;
};

/** A message a chat received. */
export type Sent = { channel: 'telegram' | 'slack'; to: string; text: string };

export type World = {
  server: TestServer;
  stub: Stub;
  dataDir: string;
  runs(): RunInput[];
  sent(): Sent[];
  /** The main session's last route, read through the runtime store. */
  lastRoute(): Promise<{ channel: string; recipient: string } | undefined>;
  /** SQL on the SQLite store (for tests about that store only). */
  rows(sql: string, ...params: string[]): Row[];
  /** POST and expect 200; returns the body. */
  post(hook: string, body: Record<string, unknown>): Promise<Record<string, unknown>>;
  close(): Promise<void>;
};

export type WorldOptions = {
  session?: Record<string, unknown>;
  mappings?: unknown[];
  /** The runner's answer to a run (default: `reply: "done"` for runs, ack for heartbeats). */
  runner?: (run: RunInput) => StubReply;
  /** A product's answer instead of its success (undefined: success). */
  chat?: (channel: 'telegram' | 'slack') => StubReply | undefined;
  /** Prepare the data directory before hookgate starts (e.g. an older store). */
  prepare?: (dataDir: string) => void;
  /** The `store` setting (default: SQLite in the data directory). */
  store?: Record<string, unknown>;
  /** More `runtime` settings (e.g. maxPromptBytes). */
  runtime?: Record<string, unknown>;
};

const defaultRunner = (run: RunInput): StubReply => ({
  body: { reply: run.kind === 'heartbeat' ? 'HEARTBEAT_OK' : `done: ${run.runId}` },
});

function answer(exchange: Exchange, options: WorldOptions): StubReply {
  if (exchange.url.startsWith('/run'))
    return (options.runner ?? defaultRunner)(exchange.body as unknown as RunInput);
  const channel = exchange.url.startsWith('/tg/') ? 'telegram' : 'slack';
  const override = exchange.url.startsWith('/run') ? undefined : options.chat?.(channel);
  if (override) return override;
  if (exchange.url.startsWith('/tg/')) {
    const chat = Number((exchange.body as { chat_id: unknown }).chat_id);
    return { body: { ok: true, result: { message_id: 1, chat: { id: chat }, date: 1 } } };
  }
  if (exchange.url.startsWith('/sl/')) return { body: { ok: true, ts: '1700000000.000100' } };
  return { status: 404, body: {} };
}

/** Start the world; close it when done. */
export async function startWorld(options: WorldOptions = {}): Promise<World> {
  const { dir, cleanup } = tempDir('hookgate-main-session-');
  options.prepare?.(dir);
  const stub = await startStub((_i, exchange) => answer(exchange, options));
  const runner = { kind: 'http', url: `${stub.url}/run` } as const;
  const server = await startTestServer(
    {
      hooks: { allowRequestSessionKey: true, mappings: options.mappings ?? [] },
      channels: {
        telegram: { botToken: '123456:tg-secret', baseUrl: `${stub.url}/tg` },
        slack: { botToken: 'xoxb-secret', baseUrl: `${stub.url}/sl` },
      },
      agents: {
        defaults: { timeoutSeconds: 10 },
        list: [
          { id: 'main', default: true, runner },
          { id: 'ops', runner },
        ],
      },
      runtime: {
        retry: { maxAttempts: 2, baseDelayMs: 20, maxDelayMs: 200 },
        heartbeat: { every: 'off', prompt: PROMPT },
        ...options.runtime,
      },
      ...(options.session && { session: options.session }),
      ...(options.store && { store: options.store }),
    },
    { dataDir: dir, runtime: true },
  ).catch(async (err: unknown) => {
    await stub.close();
    cleanup();
    throw err;
  });
  const byUrl = (prefix: string) => stub.exchanges.filter((e) => e.url.startsWith(prefix));
  return {
    server,
    stub,
    dataDir: dir,
    runs: () => byUrl('/run').map((e) => e.body as unknown as RunInput),
    sent: () =>
      stub.exchanges.flatMap((e): Sent[] => {
        const body = e.body as Record<string, unknown>;
        if (e.url.startsWith('/tg/'))
          return [{ channel: 'telegram', to: String(body['chat_id']), text: String(body['text']) }];
        if (e.url.startsWith('/sl/'))
          return [{ channel: 'slack', to: String(body['channel']), text: String(body['text']) }];
        return [];
      }),
    lastRoute: () => storeOf(server).lastRoute('main'),
    rows: (sql, ...params) => query(dir, sql, ...params),
    async post(hook, body) {
      const res = await server.post(hook, body);
      const json = (await res.json()) as Record<string, unknown>;
      expect(res.status, JSON.stringify(json)).toBe(200);
      return json;
    },
    async close() {
      await server.stop();
      await stub.close();
      cleanup();
    },
  };
}

/**
 * The text of a prompt outside every safety wrapper (what the agent is told to trust): each
 * marker pair (a 16-hex id, the same at both ends) and what is between them, with the wrapper's
 * own notice line where it has one. A heartbeat says the notice once, before its events: a
 * wrapper without its own notice is asserted to come after that one.
 */
export function outsideWrappers(text: string): string {
  return text.replace(
    /(?:^(SECURITY NOTICE: The text between the markers below [^\n]*\n))?<<<EXTERNAL_UNTRUSTED_CONTENT id="([0-9a-f]{16})">>>\n[\s\S]*?\n<<<END_EXTERNAL_UNTRUSTED_CONTENT id="\2">>>/gm,
    (_block, ownNotice: string | undefined) => {
      if (ownNotice === undefined)
        expect(
          text.startsWith(SECURITY_NOTICE_ONCE),
          'a wrapper without the notice before it',
        ).toBe(true);
      return '[wrapped]';
    },
  );
}

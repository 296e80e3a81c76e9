/**
 * Test helpers: start a real hookgate on 127.0.0.1 port 0 with a temporary
 * data directory, and send it requests with fetch.
 */
import { mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { resolveConfig } from '../../engine/config.ts';
import { type Hookgate, startHookgate } from '../../engine/hookgate.ts';
import { createLogger, type Logger } from '../../engine/log.ts';

export const TOKEN = 'test-hook-token-0123456789';

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(prefix = 'hookgate-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export type TestServer = Hookgate & {
  dataDir: string;
  /** POST JSON (or a raw string/Buffer) to `<hooks.path>/<name>` with the token. */
  post(
    name: string,
    body: unknown,
    init?: { headers?: Record<string, string>; token?: string | null },
  ): Promise<Response>;
  stop(): Promise<void>;
};

/**
 * Start hookgate with `hooks` and `server` settings merged over an enabled, tokened default
 * on 127.0.0.1 port 0: a test that sets other server options still never binds a fixed port.
 * With `logFile`, the service log (level info) is written there as JSON lines; else it is silent.
 */
export async function startTestServer(
  overrides: Record<string, unknown> = {},
  options: { dataDir?: string; runtime?: boolean; logFile?: string; logger?: Logger } = {},
): Promise<TestServer> {
  const temp = options.dataDir ? undefined : tempDir();
  const dataDir = options.dataDir ?? (temp as { dir: string }).dir;
  const { hooks, server, ...rest } = overrides as {
    hooks?: Record<string, unknown>;
    server?: Record<string, unknown>;
  };
  const raw = {
    ...rest,
    server: { host: '127.0.0.1', port: 0, ...server },
    hooks: { enabled: true, token: TOKEN, ...hooks },
  };
  const loaded = resolveConfig(raw, { baseDir: dataDir, dataDir, env: {} });
  // The ingress tests look at accepted actions; the runtime has its own tests.
  const hookgate = await startHookgate(loaded, {
    logger:
      options.logger ??
      (options.logFile
        ? createLogger('info', openSync(options.logFile, 'a'))
        : createLogger('silent')),
    runtime: options.runtime ?? false,
  });
  const hooksPath = loaded.config.hooks.path;
  return {
    ...hookgate,
    dataDir,
    post(name, body, init = {}) {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        ...init.headers,
      };
      const token = init.token === undefined ? TOKEN : init.token;
      if (token !== null) headers['authorization'] = `Bearer ${token}`;
      const payload =
        typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
      return fetch(`${hookgate.url}${hooksPath}/${name}`, {
        method: 'POST',
        headers,
        body: payload,
      });
    },
    async stop() {
      await hookgate.close();
      temp?.cleanup();
    },
  };
}

/** Minimal valid settings for configured channels in tests that do not deliver. */
export const CHANNELS = {
  telegram: { botToken: '123456:test-telegram-token', baseUrl: 'http://127.0.0.1:9' },
  slack: { botToken: 'xoxb-test-slack-token', baseUrl: 'http://127.0.0.1:9' },
} as const;

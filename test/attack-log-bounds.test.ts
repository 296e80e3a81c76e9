/**
 * Hostile inputs against the request log: every value of a request line that
 * the caller chooses (hook name, forwarded client, delivery id) is bounded, so
 * a flood of refused requests cannot write more log than it sends in requests'
 * count, whatever it puts in them.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LOGGED_CHARS } from '../engine/log.ts';
import { startTestServer, tempDir, type TestServer } from './helpers/hookgate.ts';
import { readLogLines } from './helpers/log-lines.ts';
import { pipelined } from './helpers/raw-http.ts';

const LONG_HOOK = 'A'.repeat(15_000);
const REQUESTS = 200;

function wrongTokenPost(hook: string, close = false): string {
  return (
    `POST /hooks/${hook} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer wrong\r\n` +
    `Content-Type: application/json\r\nContent-Length: 2\r\n${close ? 'Connection: close\r\n' : ''}\r\n{}`
  );
}

describe('request lines under hostile request values', () => {
  const temp = tempDir();
  const logFile = path.join(temp.dir, 'service.log');
  let server: TestServer;
  beforeAll(async () => {
    // Far from the lockout: each request here is refused 401, and logged.
    server = await startTestServer(
      { hooks: { authRateLimit: { maxFailures: 100_000 } } },
      { logFile },
    );
  });
  afterAll(async () => {
    await server.stop();
    temp.cleanup();
  });

  const flushed = async () => {
    await new Promise<void>((resolve, reject) =>
      server.logger.flush((err) => (err ? reject(err) : resolve())),
    );
    return readLogLines(logFile).filter((line) => line['msg'] === 'request');
  };

  it('200 pipelined wrong-token requests to a 15,000-character hook name: each request line carries at most 256 characters of the name', async () => {
    const before = statSync(logFile).size;
    const requests = Array.from({ length: REQUESTS }, (_, i) =>
      wrongTokenPost(LONG_HOOK, i === REQUESTS - 1),
    );
    const text = await pipelined(server.url, requests);
    expect(text.match(/HTTP\/1\.1 401 /g)).toHaveLength(REQUESTS);
    let lines: Array<Record<string, unknown>> = [];
    await expect
      .poll(async () => {
        lines = await flushed();
        return lines.length;
      })
      .toBe(REQUESTS);
    for (const line of lines) {
      expect(line['code']).toBe('unauthorized');
      expect(String(line['hook']).length).toBeLessThanOrEqual(MAX_LOGGED_CHARS + 1);
      expect(String(line['hook']).startsWith('AAAA')).toBe(true);
    }
    // Unbounded, the names alone were 3 MB of log; bounded, a line is well under 1 KB.
    expect(statSync(logFile).size - before).toBeLessThan(REQUESTS * 1024);
  });
});

/**
 * Messages Node's HTTP parser refuses (garbage, a Content-Length that is no number, a header
 * over the size limit) are answered by hookgate as JSON with a request id, but never reach the
 * request handler: they had no request line in the log and were not counted in
 * hookgate_requests_total, though the README promises a line for every refused request.
 */
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../engine/observe/metrics.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { readLogLines } from './helpers/log-lines.ts';
import { value } from './helpers/metrics-text.ts';
import { rawExchange } from './helpers/raw-http.ts';
import { waitFor } from './helpers/runtime.ts';

const temp = tempDir();
const logFile = path.join(temp.dir, 'service.log');
let server: TestServer;
let metrics: Metrics;
beforeAll(async () => {
  metrics = createMetrics({ queueDepth: async () => ({}) });
  server = await startTestServer({}, { logFile });
});
afterAll(async () => {
  metrics.close();
  await server.stop();
  temp.cleanup();
});

it.each([
  ['garbage', 'GARBAGE\r\n\r\n', 400, 'bad_request'],
  [
    'a Content-Length that is no number',
    'POST /hooks/wake HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
    400,
    'bad_request',
  ],
  [
    'a header over the size limit',
    `POST /hooks/wake HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    431,
    'headers_too_large',
  ],
])(
  '%s: answered, with a request line of its own, and counted',
  async (_name, bytes, status, code) => {
    const counted = async () =>
      value(await metrics.render(), 'hookgate_requests_total', { status: String(status), code });
    const before = await counted();
    const answer = await rawExchange(server.url, bytes);
    expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    const requestId = /x-request-id: ([0-9a-f-]+)/i.exec(answer)?.[1];
    expect(requestId).toBeDefined();
    await waitFor('its request line', () =>
      readLogLines(logFile).some((line) => line['requestId'] === requestId),
    );
    const line = readLogLines(logFile).find((l) => l['requestId'] === requestId);
    expect(line).toMatchObject({ msg: 'request', status, code, client: '127.0.0.1' });
    expect(await counted()).toBe(before + 1);
  },
);

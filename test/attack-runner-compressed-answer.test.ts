/**
 * Attack: a runner's endpoint that compresses its answer. hookgate never decodes an answer
 * (a gzip bomb of 10 KB that inflates to gigabytes costs only its 10 KB), but it did not say
 * so: a request without Accept-Encoding lets a server use any coding (RFC 9110), so an endpoint
 * that took it at its word had its reply read as "not JSON", the turn lost, and its error bodies
 * entered the run's reason as binary bytes. Every call now asks for `identity`; an answer
 * compressed anyway is named as such, its bytes never shown.
 */
import { createServer } from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterEach, expect, it } from 'vitest';
import { createHttpRunner } from '../engine/runtime/runners/http.ts';
import type { RunRequest } from '../engine/runtime/runners/runner.ts';
import { listenLoopback } from './helpers/loopback.ts';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** An endpoint answering `status` with `body`, gzipped unless the request asks for identity only. */
async function compressingEndpoint(status: number, body: Buffer, always = false) {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const identity = /^\s*identity\s*$/i.test(String(req.headers['accept-encoding'] ?? ''));
      if (identity && !always) {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(body);
        return;
      }
      res.writeHead(status, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(gzipSync(body));
    });
  });
  const { port, close } = await listenLoopback(server);
  closers.push(close);
  return `http://127.0.0.1:${port}/run`;
}

const run: RunRequest = {
  kind: 'agent',
  runId: 'gzip-1',
  agentId: 'main',
  sessionKey: 'hook:gzip',
  message: 'summarise',
  model: null,
  thinking: null,
  timeoutSeconds: 10,
  history: [],
};

it('an endpoint that compresses unless asked not to is asked for identity, and its reply is read', async () => {
  const url = await compressingEndpoint(200, Buffer.from('{"reply":"all summarised"}'));
  expect(await createHttpRunner({ url }).run(run)).toEqual({
    status: 'ok',
    reply: 'all summarised',
  });
});

it("an operator's own Accept-Encoding on the runner is replaced by identity: the reply is read", async () => {
  const url = await compressingEndpoint(200, Buffer.from('{"reply":"all summarised"}'));
  const runner = createHttpRunner({ url, headers: { 'Accept-Encoding': 'gzip', 'x-team': 'ops' } });
  expect(await runner.run(run)).toEqual({ status: 'ok', reply: 'all summarised' });
});

it('a gzip bomb answered anyway is never inflated: the turn fails naming the encoding', async () => {
  // 64 MiB of zeros in about 64 KB: inflated, it would be 64 times the answer's byte cap.
  const url = await compressingEndpoint(200, Buffer.alloc(64 * 1024 * 1024), true);
  const result = await createHttpRunner({ url }).run(run);
  expect(result.status).toBe('error');
  expect((result as { reason: string }).reason).toBe(
    'the response is gzip-encoded: hookgate asks for identity and does not decode answers',
  );
});

it('a compressed error answer is retried, its bytes kept out of the reason', async () => {
  const url = await compressingEndpoint(503, Buffer.from('upstream overloaded, try later'), true);
  expect(await createHttpRunner({ url }).run(run)).toEqual({
    status: 'retry',
    reason: 'HTTP 503 (a gzip-encoded body, not decoded)',
  });
});

/**
 * Attack: an agent that thinks for longer than five minutes before it
 * answers, on an `http` runner whose run is allowed 600 s (the default
 * `timeoutSeconds`). undici, under the one outbound call, waits at most
 * 300 s for an answer's headers unless told otherwise, so such a turn was
 * ended as a timeout ("no reply within 600s") half way through its time,
 * the agent's work thrown away. The run's own deadline now bounds the whole
 * exchange alone (an endpoint that sends its headers at once, then the body,
 * is the guard). The clock is faked: the endpoint is a real server that
 * answers when the test says so.
 */
import { createServer, type ServerResponse } from 'node:http';
import { listenLoopback } from './helpers/loopback.ts';
import { afterEach, expect, it, vi } from 'vitest';
import { createHttpRunner } from '../engine/runtime/runners/http.ts';
import type { RunRequest, RunResult } from '../engine/runtime/runners/runner.ts';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const close of closers.splice(0)) await close();
});

/** An endpoint that holds each request until `answer` is called; `headers` first when asked. */
async function slowEndpoint(sendHeadersFirst: boolean) {
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (sendHeadersFirst) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"reply": ');
      }
      held.push(res);
    });
  });
  const { port, close } = await listenLoopback(server);
  closers.push(close);
  return {
    url: `http://127.0.0.1:${port}/run`,
    held,
    answer() {
      for (const res of held.splice(0)) {
        if (sendHeadersFirst) res.end('"thought it through"}');
        else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"reply": "thought it through"}');
        }
      }
    },
  };
}

const run: RunRequest = {
  kind: 'agent',
  runId: 'slow-1',
  agentId: 'main',
  sessionKey: 'hook:slow',
  message: 'think it through',
  model: null,
  thinking: null,
  timeoutSeconds: 600,
  history: [],
};

it.each([
  ['answers after six minutes', false],
  ['sends headers, then the body after six minutes', true],
])('an http runner whose agent %s, within timeoutSeconds, is answered', async (_name, early) => {
  const endpoint = await slowEndpoint(early);
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
  const runner = createHttpRunner({ url: endpoint.url });
  let result: RunResult | undefined;
  const running = runner.run(run).then((value) => {
    result = value;
    return value;
  });
  // The request reached the endpoint (real I/O: the faked clock does not stand still for it).
  while (endpoint.held.length === 0) await vi.advanceTimersByTimeAsync(0);
  await vi.advanceTimersByTimeAsync(360_000);
  // Six minutes into a run allowed ten, nothing has ended it.
  expect(result).toBeUndefined();
  endpoint.answer();
  vi.useRealTimers();
  expect(await running).toEqual({ status: 'ok', reply: 'thought it through' });
});

it('an http runner whose agent never answers still ends at timeoutSeconds', async () => {
  const endpoint = await slowEndpoint(false);
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
  const running = createHttpRunner({ url: endpoint.url }).run(run);
  while (endpoint.held.length === 0) await vi.advanceTimersByTimeAsync(0);
  await vi.advanceTimersByTimeAsync(601_000);
  vi.useRealTimers();
  expect(await running).toEqual({ status: 'timeout', reason: 'no reply within 600s' });
});

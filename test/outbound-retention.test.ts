/**
 * An outbound call keeps nothing alive once it has ended: a flood of agent
 * runs (each bounded by a timeout of minutes, under the runtime's long-lived
 * shutdown signal) must not hold memory per call until each timeout would
 * have fired. Measured on the heap after a full collection. And a timeout
 * longer than Node's timers hold (~25 days) still waits, not fires at once.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { outboundCall } from '../engine/outbound/http-client.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('{"reply":"ok"}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/run`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function settledHeap(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

async function calls(count: number, shutdown: AbortSignal): Promise<void> {
  for (let at = 0; at < count; at += 50) {
    const batch = Array.from({ length: 50 }, () =>
      outboundCall(url, {
        headers: { 'content-type': 'application/json' },
        body: '{}',
        // A run's timeout: minutes, far beyond the test.
        timeoutMs: 10 * 60 * 1000,
        signal: shutdown,
        maxBytes: 1024,
      }),
    );
    for (const result of await Promise.all(batch)) expect(result.kind).toBe('answer');
  }
}

it('a flood of finished calls with long timeouts leaves the heap where it was', async () => {
  const shutdown = new AbortController();
  // Warm the connection pool and the code first.
  await calls(500, shutdown.signal);
  const before = settledHeap();
  await calls(10_000, shutdown.signal);
  const grown = settledHeap() - before;
  // Holding each call's signal until its timeout cost about 0.5 KB a call (5 MB here).
  expect(grown).toBeLessThan(1.5 * 2 ** 20);
}, 60_000);

it('a timeout beyond what a Node timer holds waits for the answer instead of timing out at once', async () => {
  const result = await outboundCall(url, {
    headers: { 'content-type': 'application/json' },
    body: '{}',
    timeoutMs: 2 ** 31 + 1_000,
    maxBytes: 1024,
  });
  expect(result.kind).toBe('answer');
});

/**
 * Attack: an agent endpoint that answers a byte at a time (a slow proxy, a
 * hostile relay), each byte in a packet of its own, within the run's time.
 * The answer was kept as the chunks it came in, a Buffer object per byte:
 * 200 KB trickled held 44 MB after a collection (about 220 bytes per byte,
 * about 370 at the peak; a 1 MB answer, the default
 * `runtime.maxReplyBytes`, some hundreds of MB per run, times
 * `runtime.concurrency`). It is now kept in one buffer that
 * grows by doubling: what the answer holds while it comes is bounded by
 * twice its bytes. A real endpoint; the memory is read after a forced
 * collection, while the answer is still open.
 */
import { createServer, type ServerResponse } from 'node:http';
import { afterEach, expect, it } from 'vitest';
import { createHttpRunner } from '../engine/runtime/runners/http.ts';
import { heldMemory as held } from './helpers/held-memory.ts';
import { listenLoopback } from './helpers/loopback.ts';
import { waitFor } from './helpers/runtime.ts';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const BYTES = 200_000;

it('an http runner answered a byte at a time holds about the answer, not an object per byte', async () => {
  let response: ServerResponse | undefined;
  let written = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.socket?.setNoDelay(true);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"reply": "');
      response = res;
      // One byte per write, the next once the last has gone: each its own packet.
      const next = () => {
        if (written === BYTES) return;
        written += 1;
        res.write('a', () => setImmediate(next));
      };
      next();
    });
  });
  const { port, close } = await listenLoopback(server);
  closers.push(close);
  const before = held();
  const running = createHttpRunner({ url: `http://127.0.0.1:${port}/run` }).run({
    kind: 'agent',
    runId: 'trickle-1',
    agentId: 'main',
    sessionKey: 'hook:trickle',
    message: 'answer slowly',
    model: null,
    thinking: null,
    timeoutSeconds: 120,
    history: [],
  });
  await waitFor('the whole answer but its end to be sent', () => written === BYTES, 60_000);
  // A few turns of the event loop: the last bytes are read from the socket.
  for (let turn = 0; turn < 20; turn++) await new Promise(setImmediate);
  const growth = held() - before;
  response?.end('"}');
  const result = await running;
  expect(result).toEqual({ status: 'ok', reply: 'a'.repeat(BYTES) });
  // Twice the answer plus room for the runner and the sockets (about 1.2 MB measured); an
  // object per byte held about 44 MB.
  expect(growth).toBeLessThan(40 * BYTES);
});

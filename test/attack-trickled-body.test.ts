/**
 * Attack: a caller that sends its request body a byte at a time, each byte
 * in a packet of its own, within the body's time limit. The body was kept as
 * the chunks it came in, a Buffer object per byte (some 370 bytes each): a
 * 256 KiB body, the default hooks.maxBodyBytes, held about 90 MB while it
 * came, times the connections a sender may hold. It is now kept in one
 * buffer that grows by doubling, as outbound answers are. A real listener
 * and socket; the memory is read after a forced collection, while the body
 * is still coming.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { readBody } from '../engine/body.ts';
import { heldMemory as held } from './helpers/held-memory.ts';
import { listenLoopback } from './helpers/loopback.ts';
import { waitFor } from './helpers/runtime.ts';

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const BYTES = 200_000;

it('a request body trickled a byte at a time holds about the body, not an object per byte', async () => {
  let read: Promise<Buffer> | undefined;
  let request: IncomingMessage | undefined;
  const server = createServer((req) => {
    request = req;
    read = readBody(req, { maxBytes: 300_000, timeoutMs: 120_000 });
  });
  const { port, close } = await listenLoopback(server);
  closers.push(close);
  const socket = connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  closers.push(() => {
    socket.destroy();
  });
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    `POST /hooks/wake HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${BYTES + 2}\r\n\r\n"`,
  );
  await waitFor('the request to arrive', () => request !== undefined);
  const before = held();
  let written = 0;
  // One byte per write, the next once the last has gone: each its own packet.
  await new Promise<void>((resolve) => {
    const next = () => {
      if (written === BYTES) return resolve();
      written += 1;
      socket.write('a', () => setImmediate(next));
    };
    next();
  });
  // All but the closing quote has come: the body is still being read.
  await waitFor('the bytes to be read', () => (request?.socket.bytesRead ?? 0) > BYTES);
  const during = held() - before;
  socket.write('"');
  const body = await (read as Promise<Buffer>);
  expect(body.length).toBe(BYTES + 2);
  // Twice the body at most, with room for the rest of the process's churn; an object per byte
  // was some 70 MB here.
  expect(during).toBeLessThan(8 * 1024 * 1024);
});

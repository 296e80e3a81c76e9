/**
 * Attack: a runner's or channel's answer of 60,000 one-byte chunks, written at once. Past
 * 16,384 tiny pieces in one turn, undici's parser is held until the next turn. A plain pause
 * was undone in the same turn (the caller's body stream resumes its controller whenever its
 * reader drains), so the parser went on with everything the socket held.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { afterAll, expect, it } from 'vitest';
import { outboundCall } from '../engine/outbound/http-client.ts';

const sockets = new Set<Socket>();
const upstream = createServer((socket) => {
  sockets.add(socket);
  socket.on('error', () => undefined);
  socket.once('data', () => {
    // 60,000 one-byte chunks (under the 65,536 refusal), written at once.
    const body = `{"reply":"${'x'.repeat(60_000 - 12)}"}`;
    let frames =
      'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n';
    for (const c of body) frames += `1\r\n${c}\r\n`;
    socket.end(`${frames}0\r\n\r\n`);
  });
});
afterAll(
  () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      upstream.close(() => resolve());
    }),
);

it('an answer in tiny pieces is read at most about 16,384 pieces (plus one read) per turn', async () => {
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const { port } = upstream.address() as AddressInfo;
  let inTurn = 0;
  let most = 0;
  let running = true;
  (function tick() {
    most = Math.max(most, inTurn);
    inTurn = 0;
    if (running) setImmediate(tick);
  })();
  const count = () => {
    inTurn++;
  };
  subscribe('undici:request:bodyChunkReceived', count);
  try {
    const result = await outboundCall(`http://127.0.0.1:${port}/`, {
      headers: {},
      body: '{}',
      timeoutMs: 30_000,
      maxBytes: 1024 * 1024,
    });
    expect(result.kind).toBe('answer');
  } finally {
    running = false;
    unsubscribe('undici:request:bodyChunkReceived', count);
  }
  most = Math.max(most, inTurn);
  // A pause that held would leave a turn the 16,384 pieces plus the rest of one 64 KiB read.
  expect(most).toBeLessThan(16_384 + 11_000);
}, 60_000);

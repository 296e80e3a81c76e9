/**
 * Attack: a runner's or channel's answer of 60,000 one-byte chunks, written at once. Past
 * 16,384 tiny pieces in one turn, undici's parser is held until the next turn. A plain pause
 * was undone in the same turn (the caller's body stream resumes its controller whenever its
 * reader drains), so the parser went on with everything the socket held.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTinyChunkUpstream, type TinyChunkUpstream } from './helpers/tiny-chunk-upstream.ts';
import { outboundCall } from '../engine/outbound/http-client.ts';

// 60,000 one-byte chunks (under the 65,536 refusal), written at once.
let upstream: TinyChunkUpstream;
beforeAll(async () => {
  upstream = await startTinyChunkUpstream(60_000);
});
afterAll(() => upstream?.close());

it('an answer in tiny pieces is read at most about 16,384 pieces (plus one read) per turn', async () => {
  const { port } = upstream;
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

/**
 * A hostile upstream (an agent runner, a channel API) that chunks its answer
 * a byte per chunk: each piece is parsed and handed over one by one, about a
 * million callbacks for a 1 MiB cap. The call is stopped once the pieces are
 * too many and too small (the bounds of a request body's pieces), the
 * upstream sees the connection go away long before its answer's end, and
 * the attempt ends as the other answers hookgate refuses to read do: a final
 * failure, not sent again. Honest chunking, tokens streamed a chunk each
 * included, is read whole.
 */
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChannelAdapter } from '../engine/delivery/adapter.ts';
import { ADAPTERS } from '../engine/delivery/registry.ts';
import { outboundCall } from '../engine/outbound/http-client.ts';
import { createHttpRunner } from '../engine/runtime/runners/http.ts';
import type { RunRequest } from '../engine/runtime/runners/runner.ts';
import { waitFor } from './helpers/runtime.ts';

const MIB = 1024 * 1024;
// Eight MiB a byte per chunk is 48 MiB on the wire: far more than loopback's socket buffers
// hold, so an upstream that got to write it all was read to the end.
const LARGE = 8 * MIB;

type Exchange = { piecesWritten: number; closedEarly: boolean; closed: boolean };
type Chunker = { url: string; exchanges: Exchange[] };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * An upstream answering `status` with `body` chunked in pieces of `pieceBytes`, written with
 * backpressure, counting the pieces it got to write before the client went away.
 */
async function chunker(body: string, pieceBytes: number, status = 200): Promise<Chunker> {
  const exchanges: Exchange[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('data', () => {
      const exchange: Exchange = { piecesWritten: 0, closedEarly: false, closed: false };
      exchanges.push(exchange);
      const pieces = Math.ceil(body.length / pieceBytes);
      socket.on('close', () => {
        exchange.closedEarly = exchange.piecesWritten < pieces;
        exchange.closed = true;
      });
      socket.write(
        `HTTP/1.1 ${status} X\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n`,
      );
      const write = (): void => {
        while (!socket.destroyed && exchange.piecesWritten < pieces) {
          // A batch of pieces per write: the wire format is the point, not the syscalls.
          let frames = '';
          for (let i = 0; i < 4096 && exchange.piecesWritten < pieces; i++) {
            const at = exchange.piecesWritten++ * pieceBytes;
            const piece = body.slice(at, at + pieceBytes);
            frames += `${Buffer.byteLength(piece).toString(16)}\r\n${piece}\r\n`;
          }
          if (!socket.write(frames)) {
            socket.once('drain', write);
            return;
          }
        }
        if (!socket.destroyed) socket.end('0\r\n\r\n');
      };
      write();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, exchanges };
}

/** Wait for the only exchange to end; the upstream must have been cut off before its end. */
async function expectCutEarly(upstream: Chunker): Promise<void> {
  await waitFor('the exchange to end', () => upstream.exchanges[0]?.closed, 30_000);
  expect(upstream.exchanges).toHaveLength(1);
  expect(upstream.exchanges[0]?.closedEarly).toBe(true);
}

const reply = (bytes: number) => `{"reply":"${'x'.repeat(bytes - 12)}"}`;

describe('an answer chunked a byte per chunk', () => {
  it('the outbound call stops it as too fragmented, long before its end', async () => {
    const upstream = await chunker(reply(LARGE), 1);
    const result = await outboundCall(upstream.url, {
      headers: {},
      body: '{}',
      timeoutMs: 60_000,
      maxBytes: LARGE,
    });
    expect(result).toEqual({ kind: 'too_fragmented', status: 200 });
    await expectCutEarly(upstream);
  });

  it('an http runner answering so is a final error, its turn not sent again', async () => {
    const upstream = await chunker(reply(LARGE), 1);
    const run: RunRequest = {
      kind: 'agent',
      runId: 'run-1',
      agentId: 'main',
      sessionKey: 'hook:r-1',
      message: 'What changed?',
      model: null,
      thinking: null,
      timeoutSeconds: 60,
      history: [],
    };
    const result = await createHttpRunner({ url: upstream.url, maxReplyBytes: LARGE }).run(run);
    expect(result).toEqual({
      status: 'error',
      reason: 'HTTP 200: the answer came in too many tiny pieces',
    });
    await expectCutEarly(upstream);
  });

  it('a channel API answering so fails the part as possibly posted, not resent', async () => {
    const upstream = await chunker(
      `{"ok":true,"result":{"message_id":1},"x":"${'x'.repeat(MIB / 2)}"}`,
      1,
    );
    const adapter = (ADAPTERS['telegram'] as (s: Record<string, unknown>) => ChannelAdapter)({
      botToken: '123456:tg-secret',
      timeoutMs: 30_000,
      baseUrl: upstream.url,
    });
    const result = await adapter.send('12345', 'hello');
    expect(result).toEqual({
      status: 'failed',
      reason:
        'HTTP 200 answer came in too many tiny pieces; the message may have been posted, not resent',
    });
    // Within the channel's 1 MiB cap: without the bound it was read whole and counted sent.
    await waitFor('the exchange to end', () => upstream.exchanges[0]?.closed, 30_000);
    expect(upstream.exchanges).toHaveLength(1);
  });
});

describe('honest chunking is read whole', () => {
  it.each([
    ['1 MiB in 256-byte chunks', reply(MIB), 256],
    ['20 KB streamed a few bytes (a JSON token) per chunk', reply(20_000), 4],
  ])('%s', async (_name, body, pieceBytes) => {
    const upstream = await chunker(body, pieceBytes);
    const result = await outboundCall(upstream.url, {
      headers: {},
      body: '{}',
      timeoutMs: 60_000,
      maxBytes: MIB,
    });
    expect(result).toMatchObject({ kind: 'answer', status: 200 });
    expect((result as { text: string }).text).toBe(body);
  });
});

/**
 * An honest upstream that streams its answer a JSON token per chunk (Python's iterencode behind
 * a streaming response): 300 KB within runtime.maxReplyBytes (1 MiB) is read whole. The bound
 * on an answer's tiny pieces grows with the call's byte cap, as a request body's grows with
 * hooks.maxBodyBytes; fixed at 65,536 it refused the reply (the turn had run, and its reply was
 * a final error, never delivered).
 */
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { afterAll, expect, it } from 'vitest';
import { outboundCall } from '../engine/outbound/http-client.ts';
import { createHttpRunner } from '../engine/runtime/runners/http.ts';
import type { RunRequest } from '../engine/runtime/runners/runner.ts';

const MIB = 1024 * 1024;
const body = `{"reply":"${'word '.repeat(60_000)}"}`; // about 300 KB

const sockets = new Set<Socket>();
// Answers `body` chunked four bytes a chunk (a JSON token each), written with backpressure.
const upstream = createServer((socket) => {
  sockets.add(socket);
  socket.on('error', () => undefined);
  socket.once('data', () => {
    socket.write(
      'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n',
    );
    let at = 0;
    const write = (): void => {
      while (!socket.destroyed && at < body.length) {
        let frames = '';
        for (let i = 0; i < 4096 && at < body.length; i++, at += 4) {
          const piece = body.slice(at, at + 4);
          frames += `${piece.length.toString(16)}\r\n${piece}\r\n`;
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
afterAll(
  () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      upstream.close(() => resolve());
    }),
);

async function url(): Promise<string> {
  if (!upstream.listening) await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
}

it('a 300 KB answer streamed a JSON token per chunk is read whole (maxBytes 1 MiB)', async () => {
  const result = await outboundCall(await url(), {
    headers: {},
    body: '{}',
    timeoutMs: 60_000,
    maxBytes: MIB,
  });
  expect(result).toMatchObject({ kind: 'answer', status: 200 });
}, 60_000);

it('an http runner streaming its 300 KB reply so gets its reply, not a final error', async () => {
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
  const result = await createHttpRunner({ url: await url(), maxReplyBytes: MIB }).run(run);
  // Shows the reason when it is not ok.
  expect(result.status === 'ok' ? 'ok' : (result as { reason?: string }).reason).toBe('ok');
}, 60_000);

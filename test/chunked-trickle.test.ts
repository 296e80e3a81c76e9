/**
 * The bound on chunked bodies in many small pieces counts the pieces of one turn of the event
 * loop (what holds it), not of the whole body: a body sent as one chunk and trickled in small
 * writes (a slow sender: 4200 pieces of 50 bytes, each read on a turn of its own) is
 * accepted, as the same trickle with a Content-Length is.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => server?.stop());

async function trickle(framing: 'one-chunk' | 'length'): Promise<string> {
  const body = `{"text":"${'a'.repeat(4200 * 50)}"}`;
  const head = `POST /hooks/wake HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n${
    framing === 'length'
      ? `Content-Length: ${body.length}\r\n\r\n`
      : 'Transfer-Encoding: chunked\r\n\r\n'
  }${framing === 'length' ? '' : `${body.length.toString(16)}\r\n`}`;
  const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
  socket.setNoDelay(true);
  let answer = '';
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => {
    answer += d;
  });
  socket.on('error', () => {});
  await new Promise((r) => socket.once('connect', r));
  socket.write(head);
  for (let i = 0; i < body.length && !answer; i += 50) {
    socket.write(body.slice(i, i + 50));
    // A turn of the event loop per write: the server reads each on a turn of its own.
    await new Promise((r) => setImmediate(r));
  }
  if (!answer) socket.write(framing === 'length' ? '' : '\r\n0\r\n\r\n');
  for (let i = 0; i < 200 && !answer.includes('\r\n\r\n{'); i++)
    await new Promise((r) => setTimeout(r, 25));
  socket.destroy();
  return `${answer.split('\r\n')[0]} ${answer.slice(answer.indexOf('\r\n\r\n') + 4)}`;
}

it('one chunk trickled in small writes is accepted, as the same trickle with a Content-Length is', async () => {
  expect(await trickle('length')).toMatch(/^HTTP\/1\.1 200/);
  expect(await trickle('one-chunk')).toMatch(/^HTTP\/1\.1 200/);
}, 60_000);

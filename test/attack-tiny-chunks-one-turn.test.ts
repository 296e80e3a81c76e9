/**
 * Attack: a chunked body a byte per chunk, all of it delivered at once. Past 16,384 tiny pieces
 * in one turn the connection is read no further until the next turn. A plain socket pause was
 * undone in the same turn (the request stream restarts its socket whenever its own buffer runs
 * low), so one turn parsed every piece that had arrived, up to the whole-body bound.
 *
 * The connection is an in-process duplex pair so that what arrives in one turn is exact: the
 * client writes the body, once the server reads it, in 64 KiB pieces in one go (as libuv hands
 * over up to 32 such reads in one turn).
 */
import type { IncomingMessage } from 'node:http';
import { duplexPair } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import { waitFor } from './helpers/runtime.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => server?.stop());

it('past 16,384 tiny pieces in one turn, the rest of the body waits for the next turn', async () => {
  let inTurn = 0;
  let most = 0;
  let running = true;
  (function tick() {
    most = Math.max(most, inTurn);
    inTurn = 0;
    if (running) setImmediate(tick);
  })();
  let request: IncomingMessage | undefined;
  const count = (req: IncomingMessage) => {
    request = req;
    req.prependListener('data', () => {
      inTurn++;
    });
  };
  server.server.on('request', count);

  const [client, serverSide] = duplexPair();
  Object.defineProperty(serverSide, 'remoteAddress', { value: '127.0.0.1' });
  server.server.emit('connection', serverSide);
  let answer = '';
  client.setEncoding('latin1');
  client.on('data', (d: string) => (answer += d));

  // 120,000 one-byte chunks: under the whole-body bound (131,072), so accepted.
  const pieces = 120_000;
  const body = `{"text":"${'a'.repeat(pieces - 11)}"}`;
  const frames = [
    `POST /hooks/wake HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TOKEN}\r\n` +
      'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
  ];
  for (const c of body) frames.push(`1\r\n${c}\r\n`);
  frames.push('0\r\n\r\n');
  // The head first; the body once the server reads it (its reader is listening).
  client.write(Buffer.from(frames.shift() as string, 'latin1'));
  await waitFor('the body reader', () => (request?.listenerCount('data') ?? 0) >= 2);
  const all = Buffer.from(frames.join(''), 'latin1');
  for (let at = 0; at < all.length; at += 65_536) client.write(all.subarray(at, at + 65_536));

  try {
    await waitFor('the answer', () => answer.includes('\r\n\r\n{'), 30_000);
  } finally {
    running = false;
    server.server.off('request', count);
    client.destroy();
  }
  most = Math.max(most, inTurn);
  expect(answer).toMatch(/^HTTP\/1\.1 200/);
  // With the pause holding: 16,384 pieces, plus the rest of the 64 KiB piece it came in.
  expect(most).toBeLessThan(16_384 + 11_000);
}, 60_000);

it('a keep-alive connection whose tiny-chunk body ended in the turn it paused reads its next request', async () => {
  const [client, serverSide] = duplexPair();
  Object.defineProperty(serverSide, 'remoteAddress', { value: '127.0.0.1' });
  server.server.emit('connection', serverSide);
  let answer = '';
  client.setEncoding('latin1');
  client.on('data', (d: string) => (answer += d));
  const head = (length: string) =>
    `POST /hooks/wake HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n${length}\r\n`;
  const body = `{"text":"${'b'.repeat(20_000)}"}`;
  const frames = [head('Transfer-Encoding: chunked\r\n')];
  for (const c of body) frames.push(`1\r\n${c}\r\n`);
  frames.push('0\r\n\r\n');
  const second = '{"text":"second"}';
  frames.push(`${head(`Content-Length: ${second.length}\r\n`)}${second}`);
  // All at once: the pause comes with the whole first body and the second request in hand.
  client.write(Buffer.from(frames.join(''), 'latin1'));
  try {
    await waitFor(
      'both answers',
      () => (answer.match(/HTTP\/1\.1 200/g) ?? []).length === 2,
      30_000,
    );
  } finally {
    client.destroy();
  }
}, 60_000);

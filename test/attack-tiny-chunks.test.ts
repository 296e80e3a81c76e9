/**
 * Attack: one authenticated request whose body (within hooks.maxBodyBytes) is
 * sent chunked, one byte per chunk (`1\r\na\r\n`), all in one write. Node's
 * parser hands the body over as one 'data' event (one Buffer) per chunk, and
 * libuv reads up to 32 x 64 KiB from a socket before the loop turns: the
 * 1.5 MB of framing for a 256 KiB body is parsed, chunk by chunk, in one
 * turn of the event loop. Measured: the loop held 113-299 ms by that one
 * request (the same body with a Content-Length: 6-40 ms), and every other
 * request waits for it. Now a chunked body of pieces averaging under 64
 * bytes is read no further in a turn past 16,384 of them (the rest waits for the next turn),
 * and past half as many pieces as the body limit has bytes (131,072 by default) it is refused
 * 400 `body_too_fragmented`, the socket's reading is
 * stopped and the connection closed: what is parsed is bounded by what
 * arrived before the refusal (Node's parser costs the same per chunk in a
 * bare node:http server), not by the body limit.
 */
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import { NODE } from './helpers/runtime.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => server?.stop());

// The sender: writes the request in one go, reads the answer, prints its status line.
const SENDER = `
import { connect } from 'node:net';
const [port, token, mode, size] = process.argv.slice(1);
const body = '{"text":"' + 'a'.repeat(Number(size) - 12) + '"}';
const head = 'POST /hooks/wake HTTP/1.1\\r\\nHost: a\\r\\nAuthorization: Bearer ' + token +
  '\\r\\nContent-Type: application/json\\r\\n';
let bytes;
if (mode === 'length') bytes = head + 'Content-Length: ' + body.length + '\\r\\n\\r\\n' + body;
else {
  const parts = [head + 'Transfer-Encoding: chunked\\r\\n\\r\\n'];
  const piece = mode === 'hundreds' ? 100 : mode === 'threes' ? 3 : 1;
  for (let i = 0; i < body.length; i += piece) {
    const c = body.slice(i, i + piece);
    parts.push(c.length.toString(16) + '\\r\\n' + c + '\\r\\n');
  }
  parts.push('0\\r\\n\\r\\n');
  bytes = parts.join('');
}
const socket = connect(Number(port), '127.0.0.1');
let answer = '';
socket.setEncoding('latin1');
socket.on('data', (d) => {
  answer += d;
  if (answer.includes('\\r\\n\\r\\n')) {
    if (!answer.includes('\\r\\n\\r\\n{') && !/content-length: 0/i.test(answer)) return;
    const end = answer.indexOf('\\r\\n\\r\\n');
    console.log(answer.split('\\r\\n')[0] + ' ' + answer.slice(end + 4));
    socket.destroy();
  }
});
socket.on('error', () => {});
socket.on('connect', async () => {
  const all = Buffer.from(bytes, 'latin1');
  if (mode !== 'paced') return socket.write(all);
  // Paced: two thousand one-byte chunks a write, a pause between (each a turn of its own).
  for (let i = 0; i < all.length && !answer; i += 12_000) {
    socket.write(all.subarray(i, i + 12_000));
    await new Promise((r) => setTimeout(r, 10));
  }
});
setTimeout(() => { console.log('no answer'); socket.destroy(); }, 10_000).unref();
`;

function send(
  mode: 'chunks' | 'paced' | 'hundreds' | 'threes' | 'length',
  size = 262_000,
): Promise<string> {
  const port = new URL(server.url).port;
  const args = ['--input-type=module', '-e', SENDER, port, TOKEN, mode, String(size)];
  return new Promise((resolve) => execFile(NODE, args, (_err, stdout) => resolve(stdout.trim())));
}

it('a body sent one byte per chunk is refused 400 body_too_fragmented, nothing stored', async () => {
  const before = (await server.store.listActions({ limit: 10 })).length;
  const result = await send('chunks');
  expect(result).toMatch(/^HTTP\/1\.1 400 /);
  expect(result).toContain('"code":"body_too_fragmented"');
  expect((await server.store.listActions({ limit: 10 })).length).toBe(before);
  // The server goes on serving, the same body sent whole included.
  expect(await send('length')).toMatch(/^HTTP\/1\.1 200/);
}, 60_000);

it('the same body paced two thousand chunks a turn is refused too, past 131,072 in all', async () => {
  const result = await send('paced');
  expect(result).toMatch(/^HTTP\/1\.1 400 /);
  expect(result).toContain('"code":"body_too_fragmented"');
}, 60_000);

it('a small body in tiny chunks, and a large one in chunks of 100 bytes, are accepted', async () => {
  expect(await send('chunks', 4000)).toMatch(/^HTTP\/1\.1 200/);
  expect(await send('hundreds')).toMatch(/^HTTP\/1\.1 200/);
}, 60_000);

it('a body of 87,000 three-byte chunks in one write (a chunk per JSON token, landing at once) is accepted', async () => {
  // Far past the pieces one turn may bring: the reading pauses a turn, it is not refused.
  expect(await send('threes', 262_000)).toMatch(/^HTTP\/1\.1 200/);
}, 60_000);

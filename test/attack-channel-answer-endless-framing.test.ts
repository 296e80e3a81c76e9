/**
 * Attack: a channel API (or whatever answers at its address) that floods the send's answer
 * with bytes that are not body: a status line whose reason phrase never ends, a chunk whose
 * extension never ends, informational 103 answers one after another. None of them is a body
 * byte or a header, so neither the 1 MiB answer cap nor the 16 KiB header cap counted them:
 * hookgate read all that came until the channel's timeoutMs (about a gigabyte in two seconds
 * on loopback, a core busy parsing it, up to 120 s a send), then took the answer for none and
 * sent the part again to be flooded again. The answer's bytes on the wire are bounded too,
 * with room for every honest framing of an answer within the caps: past it the answer is
 * stopped at once and judged as one too large (it came, so the part may have been posted).
 */
import { createServer, type Socket } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { deliverToTelegram } from './helpers/telegram-delivery.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

/**
 * A Telegram stand-in that answers each send with `head`, then `filler` for as long as the
 * connection takes it; it counts the sends and the bytes the connection took.
 */
async function floodingTelegram(head: string, filler: string) {
  let sends = 0;
  let flooded = 0;
  const sockets = new Set<Socket>();
  const block = Buffer.from(filler.repeat(Math.ceil(65_536 / filler.length)));
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    socket.once('data', () => {
      sends++;
      socket.write(head);
      const pump = () => {
        while (!socket.destroyed) {
          flooded += block.length;
          if (!socket.write(block)) return void socket.once('drain', pump);
        }
      };
      pump();
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
  const { port } = server.address() as { port: number };
  return { baseUrl: `http://127.0.0.1:${port}`, sends: () => sends, flooded: () => flooded };
}

function deliver(telegram: { baseUrl: string }) {
  return deliverToTelegram({
    baseUrl: telegram.baseUrl,
    reply: 'the owner should read this',
    timeoutMs: 5000,
    maxAttempts: 2,
    waitMs: 30_000,
    cleanups,
  });
}

// The wire bound of a 1 MiB answer is about 4 MiB; the rest is what the sockets' buffers held.
const MAX_FLOODED = 32 * 1024 * 1024;

it.each([
  [
    'a status line whose reason phrase never ends',
    'HTTP/1.1 200 ',
    'a',
    'answer headers too large',
  ],
  [
    'a 200 whose chunk extension never ends',
    'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n1;',
    'a',
    'HTTP 200 answer exceeded',
  ],
  [
    '103 Early Hints answers that never end',
    '',
    'HTTP/1.1 103 Early Hints\r\nlink: </a>; rel=preload\r\n\r\n',
    'answer headers too large',
  ],
] as const)(
  'a send answered with %s is stopped soon, as too large, and not sent again',
  async (_attack, head, filler, said) => {
    const telegram = await floodingTelegram(head, filler);
    const run = await deliver(telegram);
    expect(run.outcome?.delivery).toMatchObject({ state: 'failed', attempts: 1 });
    expect(run.outcome?.delivery?.reason).toContain(said);
    expect(run.outcome?.delivery?.reason).toContain('the message may have been posted, not resent');
    expect(telegram.sends()).toBe(1);
    expect(telegram.flooded()).toBeLessThan(MAX_FLOODED);
  },
);

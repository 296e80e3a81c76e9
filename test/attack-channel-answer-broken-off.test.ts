/**
 * Attack: a channel API (or whatever answers at its address: a proxy, a
 * tunnel, a relay) that says `200 OK` to a send, then breaks the answer's
 * body off (the connection reset mid-body) or stops sending it until the
 * channel's timeoutMs. The status line came: the product took the message
 * and posted it. hookgate read only "no complete answer" and sent the part
 * again, so the owner's chat got the reply twice (once per attempt, up to
 * runtime.retry.maxAttempts times when every answer is cut so). The
 * runner's side judges a broken-off answer by its status ("an HTTP answer
 * that breaks off midway is judged by its status"), and a channel answer
 * that came too large is never resent ("an answer came, so the request
 * arrived and the message may have gone out"); a 2xx that breaks off must
 * not be resent either: the part fails saying it may have been posted (the
 * body that would say more never came, as with an answer too large). Any
 * other status refused the part, so nothing was posted: it is sent again.
 */
import { createServer } from 'node:http';
import { afterEach, expect, it } from 'vitest';
import { listenLoopback } from './helpers/loopback.ts';
import { deliverToTelegram } from './helpers/telegram-delivery.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

/**
 * A Telegram stand-in whose answer to every send is `200`, then part of the body, then (reset)
 * the connection destroyed, or (stall) nothing more.
 */
async function cutTelegram(mode: 'reset' | 'stall', status = 200) {
  const sends: string[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      raw += chunk;
    });
    req.on('end', () => {
      sends.push(raw);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.write(status === 200 ? '{"ok":true,"result":{"message_id":' : '{"ok":false,"descr');
      if (mode === 'reset') setTimeout(() => res.socket?.destroy(), 20);
    });
  });
  const { port, close } = await listenLoopback(server);
  cleanups.push(close);
  return { baseUrl: `http://127.0.0.1:${port}`, sends };
}

function deliver(telegram: { baseUrl: string }) {
  return deliverToTelegram({
    baseUrl: telegram.baseUrl,
    reply: 'the owner should read this once',
    timeoutMs: 1000,
    maxAttempts: 3,
    waitMs: 20_000,
    cleanups,
  });
}

it.each([
  ['resets the connection mid-body', 'reset'],
  ['stalls mid-body until the timeout', 'stall'],
] as const)('a send answered 200 whose body %s is not sent again', async (_what, mode) => {
  const telegram = await cutTelegram(mode);
  const run = await deliver(telegram);
  // The product said 200: the part may have been posted; what the body would have said never
  // came. Sent once, and the record says so.
  expect(telegram.sends).toHaveLength(1);
  expect(run.outcome?.delivery).toMatchObject({ state: 'failed', attempts: 1 });
  expect(run.outcome?.delivery?.reason).toContain(
    'HTTP 200, then the answer broke off; the message may have been posted, not resent',
  );
});

it.each([
  [503, 'reset'],
  [400, 'reset'],
  [401, 'stall'],
] as const)('a %i that breaks off (%s) posted nothing: it is sent again', async (status, mode) => {
  const refused = await cutTelegram(mode, status);
  const run = await deliver(refused);
  expect(run.outcome?.delivery).toMatchObject({ state: 'dead', attempts: 3 });
  expect(run.outcome?.delivery?.reason).toContain(`HTTP ${status}, then the answer broke off`);
  expect(refused.sends).toHaveLength(3);
});

/**
 * A channel answer whose 2xx status came and whose body was still coming when the worker's
 * shutdown ended the call: the product took the message, so the part fails as possibly posted
 * and is not sent again (it was retried after the restart, and the chat got it twice). A
 * non-2xx status cut short so is retried, as nothing was posted.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { postJson } from '../engine/delivery/adapters/http-call.ts';
import { listenLoopback } from './helpers/loopback.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

/** A channel API that answers `status` and then stalls in the middle of its body. */
async function stallingApi(status: number): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.write('{"ok":true,"result":{"message_id":');
    });
  });
  const { port, close } = await listenLoopback(server);
  cleanups.push(async () => {
    server.closeAllConnections();
    await close();
  });
  return `http://127.0.0.1:${port}/bot123:x/sendMessage`;
}

/** Post to `url` and abort the call (the worker stopping) once its answer's headers came. */
async function postThenShutDown(url: string) {
  const shutdown = new AbortController();
  // undici tells its diagnostics channel when an answer's headers arrive; the abort comes in
  // the turn after, while the body is being read.
  const onHeaders = () => setImmediate(() => shutdown.abort(new Error('worker stopping')));
  subscribe('undici:request:headers', onHeaders);
  cleanups.push(() => {
    unsubscribe('undici:request:headers', onHeaders);
  });
  return postJson(
    url,
    { chat_id: 1, text: 'hi' },
    {
      headers: {},
      timeoutMs: 30_000,
      signal: shutdown.signal,
    },
  );
}

describe('a shutdown while a channel answer is coming', () => {
  it('after a 2xx: the part fails as possibly posted, not resent', async () => {
    const outcome = await postThenShutDown(await stallingApi(200));
    expect(outcome.result).toEqual({
      status: 'failed',
      reason: 'HTTP 200, then the answer broke off; the message may have been posted, not resent',
    });
  });

  it('after a 503: retried, nothing was posted', async () => {
    const outcome = await postThenShutDown(await stallingApi(503));
    expect(outcome.result).toEqual({
      status: 'retry',
      reason: 'HTTP 503, then the answer broke off',
    });
  });
});

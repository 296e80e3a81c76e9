/**
 * Attack: concurrent Teams sends share one token request, which ran under the first sender's
 * signal. That sender's abort (its run cut short, a shutdown of its worker) failed the token
 * for every other sender waiting on it; and a later sender's own abort did not end its wait,
 * which lasted as long as the first sender's request. Each sender's signal now governs its own
 * wait only; the shared request has its own timeout, and is dropped once nobody waits for it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTeamsAdapter } from '../engine/delivery/adapters/msteams.ts';
import { waitFor } from './helpers/runtime.ts';

const TOKEN_PATH = '/tenant/oauth2/v2.0/token';
const CONVERSATION = '19:0a1b2c3d4e5f@thread.tacv2';

// Token requests are held until the test answers them; activities are answered at once.
const heldTokens: Array<{ req: IncomingMessage; res: ServerResponse }> = [];
let tokenCalls = 0;
let closedUnanswered = 0;
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url !== TOKEN_PATH) {
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end('{"id":"1"}');
        return;
      }
      tokenCalls++;
      heldTokens.push({ req, res });
      res.on('close', () => {
        if (!res.writableEnded) closedUnanswered++;
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  heldTokens.length = 0;
  tokenCalls = 0;
  closedUnanswered = 0;
});

function answerToken(): void {
  const held = heldTokens.shift();
  held?.res.writeHead(200, { 'content-type': 'application/json' });
  held?.res.end(JSON.stringify({ access_token: 'token-1', expires_in: 3600 }));
}

const adapterFor = () =>
  createTeamsAdapter({
    appId: 'app',
    appPassword: 'teams~S3cret.Value_123',
    tenantId: 'tenant',
    serviceUrl: `${base}/teams/`,
    tokenUrl: `${base}${TOKEN_PATH}`,
    timeoutMs: 20_000,
  });

describe('a shared Teams token request and its waiters', () => {
  it("the first sender's abort does not fail the token for the others", async () => {
    const adapter = adapterFor();
    const first = new AbortController();
    const aborted = adapter.send(CONVERSATION, 'one', first.signal);
    const other = adapter.send(CONVERSATION, 'two');
    await waitFor('the token request', () => heldTokens.length === 1, 10_000);
    first.abort(new Error('run cut short'));
    expect(await aborted).toMatchObject({
      status: 'retry',
      reason: expect.stringMatching(/interrupted/),
    });
    // The shared request goes on for the sender still waiting.
    expect(closedUnanswered).toBe(0);
    answerToken();
    expect(await other).toMatchObject({ status: 'sent' });
    expect(tokenCalls).toBe(1);
  });

  it("a later sender's abort ends its own wait at once, and only its own", async () => {
    const adapter = adapterFor();
    const first = adapter.send(CONVERSATION, 'one');
    await waitFor('the token request', () => heldTokens.length === 1, 10_000);
    const later = new AbortController();
    const waiting = adapter.send(CONVERSATION, 'two', later.signal);
    later.abort(new Error('shutdown'));
    // Answered while the token request is still held: its wait ended with its own abort.
    expect(await waiting).toMatchObject({
      status: 'retry',
      reason: expect.stringMatching(/interrupted/),
    });
    expect(heldTokens).toHaveLength(1);
    answerToken();
    expect(await first).toMatchObject({ status: 'sent' });
    expect(tokenCalls).toBe(1);
  });

  it('when every waiter has gone, the shared request is dropped and the next send asks anew', async () => {
    const adapter = adapterFor();
    const a = new AbortController();
    const b = new AbortController();
    const sends = [
      adapter.send(CONVERSATION, 'one', a.signal),
      adapter.send(CONVERSATION, 'two', b.signal),
    ];
    await waitFor('the token request', () => heldTokens.length === 1, 10_000);
    a.abort(new Error('gone'));
    b.abort(new Error('gone'));
    for (const result of await Promise.all(sends)) expect(result.status).toBe('retry');
    await waitFor('the token request to be dropped', () => closedUnanswered === 1, 10_000);
    heldTokens.length = 0;
    const next = adapter.send(CONVERSATION, 'three');
    await waitFor('a new token request', () => heldTokens.length === 1, 10_000);
    answerToken();
    expect(await next).toMatchObject({ status: 'sent' });
    expect(tokenCalls).toBe(2);
  });
});

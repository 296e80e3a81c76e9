/**
 * Reload after reload with a new answer cap each time: each cap had its own pool of
 * connections, kept for good, so the pools and their keep-alive sockets grew with every
 * distinct cap ever used. Pools no call holds are now closed beyond the few used last; a pool a
 * call is using is never closed under it.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_IDLE_POOLS } from '../engine/outbound/dispatcher-pools.ts';
import { outboundCall } from '../engine/outbound/http-client.ts';
import { waitFor } from './helpers/runtime.ts';

const open = new Set<Socket>();
const held: ServerResponse[] = [];
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    // The slow path answers when the test says so: a call in flight meanwhile.
    if (req.url === '/slow') held.push(res);
    else res.end('{"ok":true}');
  });
  // Connections stay open for as long as the client keeps them: only its pool closes them.
  server.keepAliveTimeout = 120_000;
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const call = (maxBytes: number, path = '/') =>
  outboundCall(`${url}${path}`, { headers: {}, body: '{}', timeoutMs: 20_000, maxBytes });

describe('outbound pools per answer cap', () => {
  it('many distinct caps one after another: the unused pools are closed, sockets bounded', async () => {
    const caps = Array.from({ length: MAX_IDLE_POOLS * 3 }, (_, i) => 100_000 + i);
    for (const cap of caps) expect((await call(cap)).kind).toBe('answer');
    await waitFor(
      `at most ${MAX_IDLE_POOLS} open connections (open: ${open.size})`,
      () => open.size <= MAX_IDLE_POOLS,
      10_000,
    );
    // A cap whose pool was closed works again (a new pool).
    expect((await call(caps[0] as number)).kind).toBe('answer');
  });

  it('a pool carrying a call in flight is not closed under it', async () => {
    const slow = call(7_777, '/slow');
    await waitFor('the slow call to arrive', () => held.length === 1, 10_000);
    for (let i = 0; i < MAX_IDLE_POOLS * 2; i++)
      expect((await call(200_000 + i)).kind).toBe('answer');
    held.shift()?.end('{"late":true}');
    const result = await slow;
    expect(result).toMatchObject({ kind: 'answer', status: 200, text: '{"late":true}' });
  });
});

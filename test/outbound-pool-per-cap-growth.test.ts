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
// Each request as the server saw it: its path and the connection it came on.
const seen: Array<{ path: string; socket: Socket }> = [];
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    seen.push({ path: req.url ?? '', socket: req.socket });
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

  it('a pool leased again after it was idle is not closed under its call: its connections stay', async () => {
    // Used once: the pool is idle, among those given back.
    expect((await call(8_888)).kind).toBe('answer');
    const first = seen.at(-1)?.socket;
    const slow = call(8_888, '/slow');
    await waitFor('the slow call to arrive', () => held.length === 1, 10_000);
    const carrier = seen.findLast((request) => request.path === '/slow')?.socket;
    // More pools given back than are kept idle while the call is in flight.
    for (let i = 0; i < MAX_IDLE_POOLS * 2; i++)
      expect((await call(300_000 + i)).kind).toBe('answer');
    held.shift()?.end('{"late":true}');
    expect(await slow).toMatchObject({ kind: 'answer', status: 200, text: '{"late":true}' });
    // undici's close is graceful: a pool closed under the call lets it end, then drops its
    // connections, and the next call of its cap opens another in a new pool.
    expect((await call(8_888)).kind).toBe('answer');
    expect([first, carrier]).toContain(seen.at(-1)?.socket);
    expect([first?.destroyed, carrier?.destroyed]).toEqual([false, false]);
  });
});

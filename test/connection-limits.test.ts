/**
 * Connection limits with real sockets on 127.0.0.1: `server.maxConnections`
 * (server-wide) and `server.maxConnectionsPerAddress` (per client address,
 * IPv6 per /64, trusted proxies exempt). A connection past a cap is closed
 * unanswered; the earlier ones keep working, a closed one frees its place,
 * and no way of closing leaks a count.
 */
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { createConnectionLimiter } from '../engine/connection-limit.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { answeredOn, openRecording, type RecordingClient } from './helpers/raw-http.ts';
import { waitFor } from './helpers/runtime.ts';

const servers: TestServer[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

async function start(server: Record<string, unknown>): Promise<TestServer> {
  // Idle keep-alive sockets stay open for the length of a test on a loaded machine.
  const started = await startTestServer({ server: { keepAliveTimeoutMs: 60_000, ...server } });
  servers.push(started);
  return started;
}

/** A client connection, destroyed after the test. */
function open(url: string): RecordingClient {
  const client = openRecording(url);
  sockets.push(client.socket);
  return client;
}

const REQUEST = 'GET /hooks/wake HTTP/1.1\r\nHost: localhost\r\n\r\n';

/** Send one request on the connection; true once an HTTP answer came, false if it closed unanswered. */
const answered = (client: RecordingClient, request = REQUEST) => answeredOn(client, request);

/** Open a connection and prove the server counts it (an answer came back). */
async function openAnswered(url: string): Promise<RecordingClient> {
  const client = open(url);
  expect(await answered(client)).toBe(true);
  return client;
}

/** Retry `attempt` until it gives a value; fail after 30 s. */
async function eventually<T>(what: string, attempt: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await attempt();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Open connections until one is answered: a place freed by a close is seen a moment later. */
function openWhenFree(url: string): Promise<RecordingClient> {
  return eventually('a connection to be accepted', async () => {
    const client = open(url);
    return (await answered(client)) ? client : undefined;
  });
}

describe('server.maxConnectionsPerAddress', () => {
  it('one address opening one connection more than the cap: the extra one is closed unanswered, the earlier ones still work', async () => {
    const server = await start({ maxConnectionsPerAddress: 3 });
    const kept = [
      await openAnswered(server.url),
      await openAnswered(server.url),
      await openAnswered(server.url),
    ];
    const extra = open(server.url);
    expect(await answered(extra)).toBe(false);
    expect(extra.received()).toBe('');
    for (const client of kept) expect(await answered(client)).toBe(true);
  });

  it('after one connection closes, a new one from the address is accepted', async () => {
    const server = await start({ maxConnectionsPerAddress: 2 });
    const first = await openAnswered(server.url);
    await openAnswered(server.url);
    expect(await answered(open(server.url))).toBe(false);
    first.socket.end();
    const next = await openWhenFree(server.url);
    expect(await answered(next)).toBe(true);
  });

  it('many open/close cycles (client end, client reset, server close) leak no place', async () => {
    const server = await start({ maxConnectionsPerAddress: 3 });
    for (let cycle = 0; cycle < 60; cycle++) {
      const batch = [
        await openWhenFree(server.url),
        await openWhenFree(server.url),
        await openWhenFree(server.url),
      ];
      const [ended, reset, serverClosed] = batch as [
        RecordingClient,
        RecordingClient,
        RecordingClient,
      ];
      ended.socket.end();
      reset.socket.resetAndDestroy();
      // The server closes after answering a request that asks for it.
      await answered(
        serverClosed,
        'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
      );
      await waitFor('the batch to close', () => batch.every((client) => client.closed()), 30_000);
    }
    // Every place is free again: three at once are all accepted (a leak would refuse one for ever).
    await eventually('three connections at once to be accepted', async () => {
      const clients = [open(server.url), open(server.url), open(server.url)];
      const results = await Promise.all(clients.map((client) => answered(client)));
      for (const client of clients) client.socket.destroy();
      return results.every(Boolean) || undefined;
    });
  });

  it('trusted proxies are exempt (many clients share them)', async () => {
    const server = await start({ maxConnectionsPerAddress: 2, trustedProxies: ['127.0.0.1'] });
    const clients = [];
    for (let i = 0; i < 5; i++) clients.push(await openAnswered(server.url));
    for (const client of clients) expect(await answered(client)).toBe(true);
  });
});

describe('server.maxConnections', () => {
  it('a connection past the server-wide cap is closed unanswered; a freed place is taken again', async () => {
    const server = await start({ maxConnections: 2 });
    const first = await openAnswered(server.url);
    const second = await openAnswered(server.url);
    expect(await answered(open(server.url))).toBe(false);
    expect(await answered(second)).toBe(true);
    first.socket.end();
    await openWhenFree(server.url);
  });
});

/** A stand-in socket with a given peer address (no real IPv6 peers on this machine). */
function peer(remoteAddress: string) {
  const socket = Object.assign(new EventEmitter(), {
    remoteAddress,
    destroyed: false,
    destroy() {
      socket.destroyed = true;
      socket.emit('close');
    },
  });
  return socket as unknown as Socket & { destroyed: boolean };
}

describe('counting keys', () => {
  it('IPv6 peers are counted per /64, IPv4-mapped peers as their IPv4 address', () => {
    const limiter = createConnectionLimiter(2, []);
    expect(limiter.admit(peer('2001:db8:1:2::1'))).toBe(true);
    expect(limiter.admit(peer('2001:db8:1:2:ffff::9'))).toBe(true);
    expect(limiter.admit(peer('2001:db8:1:2:abcd::7'))).toBe(false);
    expect(limiter.admit(peer('2001:db8:1:3::1'))).toBe(true);
    expect(limiter.admit(peer('::ffff:192.0.2.7'))).toBe(true);
    expect(limiter.admit(peer('192.0.2.7'))).toBe(true);
    expect(limiter.admit(peer('192.0.2.7'))).toBe(false);
    expect(limiter.openFor('2001:db8:1:2::5')).toBe(2);
  });

  it('a closed socket gives its place back, once', () => {
    const limiter = createConnectionLimiter(1, []);
    const first = peer('198.51.100.4');
    expect(limiter.admit(first)).toBe(true);
    first.destroy();
    first.emit('close');
    expect(limiter.openFor('198.51.100.4')).toBe(0);
    expect(limiter.admit(peer('198.51.100.4'))).toBe(true);
    expect(limiter.admit(peer('198.51.100.4'))).toBe(false);
  });
});

describe('settings', () => {
  const base = { hooks: { enabled: true, token: 'a-token-0123456789' } };
  const options = { baseDir: '/tmp', dataDir: '/tmp', env: {} };

  it('default to 1024 connections, 64 per address', () => {
    const { config } = resolveConfig(base, options);
    expect(config.server.maxConnections).toBe(1024);
    expect(config.server.maxConnectionsPerAddress).toBe(64);
  });

  it.each([
    [{ maxConnections: 0 }],
    [{ maxConnectionsPerAddress: 0 }],
    [{ maxConnectionsPerAddress: 1.5 }],
  ])('refuses %j', (server) => {
    expect(() => resolveConfig({ ...base, server }, options)).toThrow(/server\.maxConnections/);
  });
});

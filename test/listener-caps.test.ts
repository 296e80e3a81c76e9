/**
 * The listeners beside the hook listener (the admin listener, the mail
 * flow's push listener) take connections before anything of the sender is
 * known, as the hook listener does, so they are held to the same caps
 * (`server.maxConnections`, `server.maxConnectionsPerAddress`): one peer
 * holding many half-sent requests open cannot use up the process's file
 * descriptors, which every listener shares. A connection past a cap is
 * closed unanswered; the ones before it still get their answers.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startPushServer } from '../engine/gmail/push-server.ts';
import { createLogger } from '../engine/log.ts';
import { type AdminStack, startAdminStack } from './helpers/admin.ts';
import { startTestServer, TOKEN } from './helpers/hookgate.ts';
import { answeredOn, openRecording, type RecordingClient } from './helpers/raw-http.ts';
import { waitFor } from './helpers/runtime.ts';

const sockets: Socket[] = [];
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(stops.splice(0).map((stop) => stop()));
});

/** A client connection, destroyed after the test. */
function open(url: string): RecordingClient {
  const client = openRecording(url);
  sockets.push(client.socket);
  return client;
}

/** A request whose headers never end: the connection stays open until the headers' timeout. */
async function holdOpen(url: string): Promise<RecordingClient> {
  const client = open(url);
  await new Promise<void>((resolve, reject) => {
    client.socket.once('connect', resolve);
    client.socket.once('error', reject);
  });
  client.socket.write('POST / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ');
  return client;
}

const FINISH_HELD = 'a\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';
const WHOLE =
  'POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';

/** `cap` connections held half-sent, then one more: it is closed unanswered, the held ones are answered. */
async function expectCapped(url: string, cap: number): Promise<void> {
  const held: RecordingClient[] = [];
  for (let i = 0; i < cap; i++) held.push(await holdOpen(url));
  const extra = open(url);
  expect(await answeredOn(extra, WHOLE)).toBe(false);
  expect(extra.received()).toBe('');
  for (const client of held) expect(await answeredOn(client, FINISH_HELD)).toBe(true);
}

async function pushListener(caps: { maxConnections: number; maxConnectionsPerAddress: number }) {
  const push = await startPushServer(
    {
      bind: '127.0.0.1',
      port: 0,
      path: '/gmail-pubsub',
      timeoutMs: 20_000,
      caps: { ...caps, trustedProxies: [] },
    },
    {
      account: 'owner@example.com',
      authenticate: async () => ({ ok: false, reason: 'missing' }) as never,
      challenge: 'Bearer',
      decode: () => ({ ok: false, reason: 'not-an-object' }) as never,
      record: () => false,
      onRecorded: () => undefined,
      logger: createLogger('silent'),
    },
  );
  stops.push(() => push.close());
  return push.url;
}

async function adminListener(server: Record<string, unknown>): Promise<string> {
  const stack: AdminStack = await startAdminStack({ server });
  stops.push(() => stack.stop());
  return stack.admin.url;
}

describe('the push listener', () => {
  it('one address holding half-sent requests open past maxConnectionsPerAddress: the extra connection is closed unanswered', async () => {
    await expectCapped(
      await pushListener({ maxConnections: 1024, maxConnectionsPerAddress: 3 }),
      3,
    );
  });

  it('connections past maxConnections: the extra one is closed unanswered', async () => {
    await expectCapped(await pushListener({ maxConnections: 2, maxConnectionsPerAddress: 64 }), 2);
  });
});

describe('the admin listener', () => {
  it('one address holding half-sent requests open past maxConnectionsPerAddress: the extra connection is closed unanswered', async () => {
    await expectCapped(await adminListener({ maxConnectionsPerAddress: 3 }), 3);
  });

  it('connections past maxConnections: the extra one is closed unanswered', async () => {
    await expectCapped(await adminListener({ maxConnections: 2 }), 2);
  });
});

describe('a socket answered outside the request path is closed by the server', () => {
  /** Connections that never close their side, each sent `request`; resolves once each is answered. */
  async function halfOpen(url: string, request: string, count: number): Promise<RecordingClient[]> {
    const { hostname, port } = new URL(url);
    const clients: RecordingClient[] = [];
    for (let i = 0; i < count; i++) {
      const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
      sockets.push(socket);
      let received = '';
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
      });
      socket.on('error', () => undefined);
      socket.write(request);
      clients.push({ socket, received: () => received, closed: () => socket.destroyed });
    }
    await waitFor(
      'every connection answered',
      () => clients.every((client) => client.received().includes('HTTP/1.1 ')) || undefined,
      30_000,
    );
    return clients;
  }

  /** A request from the same address gets its answer once the server let the held sockets go. */
  async function acceptedAgain(url: string): Promise<void> {
    await waitFor(
      'a new request from the address to be answered',
      async () => {
        const status = await fetch(`${url}/hooks/wake`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body: '{"text":"after"}',
        }).then(
          (res) => res.status,
          () => undefined,
        );
        return status === 200 || undefined;
      },
      30_000,
    );
  }

  async function server() {
    const started = await startTestServer({
      server: { maxConnectionsPerAddress: 2, headersTimeoutMs: 300, requestTimeoutMs: 500 },
    });
    stops.push(() => started.stop());
    return started.url;
  }

  it('a peer that never closes after its CONNECT was answered holds no place under the cap', async () => {
    const url = await server();
    const held = await halfOpen(
      url,
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
      2,
    );
    expect(held.every((client) => client.received().startsWith('HTTP/1.1 4'))).toBe(true);
    await acceptedAgain(url);
  });

  it('a peer that never closes after its half-sent request was answered 408 holds no place under the cap', async () => {
    const url = await server();
    const held = await halfOpen(url, 'POST /hooks/wake HTTP/1.1\r\nHost: x\r\n', 2);
    expect(held.every((client) => client.received().startsWith('HTTP/1.1 408'))).toBe(true);
    await acceptedAgain(url);
  });
});

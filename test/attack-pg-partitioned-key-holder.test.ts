/**
 * Attack on the PostgreSQL store: an instance is cut off from the database in the middle of
 * an accept (a network partition, a frozen VM: its connection is not closed, so the server
 * keeps its transaction open, and the key rows it inserted locked, until
 * idle_in_transaction_session_timeout, 60 s). Its caller times out and, as the README says,
 * retries with the same idempotency key, through the balancer, on another instance. There the
 * repeat's insert waits on the dead transaction's key, and the whole multi-row statement waits
 * with it: every other caller's request that arrived in the same event-loop turn (no key, or
 * keys of their own) waited 30 s (statement_timeout) and was then refused 503, for a lock on a
 * key that was not theirs.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';

const skip = skipPostgres();

/**
 * A TCP relay to the database that, once armed, forwards the first accept statement it sees
 * and then forwards nothing more either way, closing nothing: a partition.
 */
async function partitionableRelay(port: number) {
  let armed = false;
  let cut = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const backend = connect({ host: '127.0.0.1', port });
    for (const socket of [client, backend]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
    }
    client.on('data', (data) => {
      if (cut) return;
      backend.write(data);
      if (armed && data.includes('INSERT INTO idempotency_keys')) cut = true;
    });
    backend.on('data', (data) => {
      if (!cut) client.write(data);
    });
    client.on('close', () => !cut && backend.destroy());
    backend.on('close', () => !cut && client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    arm: () => {
      armed = true;
    },
    isCut: () => cut,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

describe.skipIf(skip)('attack: a key held by an instance cut off mid-accept', () => {
  let server: PostgresServer;
  let relay: Awaited<ReturnType<typeof partitionableRelay>>;
  let cutOff: TestServer;
  let healthy: TestServer;

  beforeAll(async () => {
    server = await startPostgres();
    const url = await server.createDatabase();
    healthy = await startTestServer({ store: { kind: 'postgres', url } });
    relay = await partitionableRelay(server.port);
    cutOff = await startTestServer({
      store: { kind: 'postgres', url: url.replace(`:${server.port}/`, `:${relay.port}/`) },
    });
  }, 180_000);

  afterAll(async () => {
    relay?.close();
    await healthy?.stop();
    await cutOff?.stop().catch(() => undefined);
    await server?.stop();
  }, 90_000);

  it("another instance's callers are not held up or refused for the cut-off instance's key", async () => {
    expect((await cutOff.post('agent', { message: 'warm-up' })).status).toBe(200);
    relay.arm();
    // Its caller never hears back (and gives up).
    const lost = cutOff
      .post('agent', { message: 'order 78', idempotencyKey: 'order-78' })
      .catch(() => undefined);
    while (!relay.isCut()) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 200));

    // The caller's retry reaches the healthy instance while other callers send their own.
    const retry = healthy.post('agent', { message: 'order 78', idempotencyKey: 'order-78' });
    const others: Array<Promise<{ status: number; ms: number }>> = [];
    for (let burst = 0; burst < 20; burst++) {
      for (let i = 0; i < 2; i++) {
        const sent = performance.now();
        others.push(
          healthy
            .post('agent', { message: `other ${burst}.${i}` })
            .then((response) => ({ status: response.status, ms: performance.now() - sent })),
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
    const answered = await Promise.all(others);
    await retry.catch(() => undefined);
    void lost;
    const slow = answered.filter(({ status, ms }) => status !== 200 || ms > 5_000);
    expect(slow).toEqual([]);
  }, 120_000);
});

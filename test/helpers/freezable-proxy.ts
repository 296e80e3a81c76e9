/**
 * A loopback TCP proxy in front of one server (a test's PostgreSQL) whose path the test can
 * silence without closing anything, as when the server's host vanishes without a reset or a
 * partition drops every packet: frozen, no byte is forwarded either way and a connection
 * opened meanwhile is accepted and held; thawed, what was held is delivered (late), as when a
 * partition heals. Stranded, the connections frozen now stay frozen for good while new ones
 * reach the server again: a path that never comes back (a failover, a NAT entry dropped).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export type FreezableProxy = {
  port: number;
  /** The given URL with its host and port replaced by the proxy's. */
  through(url: string): string;
  /** Stop forwarding on every connection, and hold those opened until `thaw` or `strand`. */
  freeze(): void;
  /** Forward again, on every connection: what was held is delivered now. */
  thaw(): void;
  /** New connections are forwarded again; those frozen stay frozen until `close`. */
  strand(): void;
  close(): Promise<void>;
};

type Pair = { client: Socket; upstream: Socket | undefined; frozen: boolean };

/** Start a proxy to `127.0.0.1:port`, forwarding. */
export async function startFreezableProxy(port: number): Promise<FreezableProxy> {
  const pairs = new Set<Pair>();
  let frozen = false;

  function forward(pair: Pair): void {
    pair.frozen = false;
    if (pair.client.destroyed) return;
    if (!pair.upstream) {
      const upstream = connect({ host: '127.0.0.1', port });
      upstream.on('error', () => pair.client.destroy());
      upstream.on('close', () => pair.client.destroy());
      pair.upstream = upstream;
    }
    // pipe() resumes a paused source.
    pair.client.pipe(pair.upstream);
    pair.upstream.pipe(pair.client);
  }

  function hold(pair: Pair): void {
    pair.frozen = true;
    // Unpiped first: a destination's 'drain' would resume a source that is only paused.
    pair.client.unpipe();
    pair.client.pause();
    pair.upstream?.unpipe();
    pair.upstream?.pause();
  }

  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    const pair: Pair = { client, upstream: undefined, frozen };
    pairs.add(pair);
    client.on('error', () => undefined);
    client.on('close', () => {
      // Ended, not destroyed: what the client sent before its close is still delivered.
      pair.upstream?.end();
      pairs.delete(pair);
    });
    if (!frozen) forward(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const own = typeof address === 'object' && address ? address.port : 0;

  return {
    port: own,
    through(url) {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(own);
      return parsed.toString();
    },
    freeze() {
      frozen = true;
      for (const pair of pairs) hold(pair);
    },
    thaw() {
      frozen = false;
      for (const pair of pairs) if (pair.frozen) forward(pair);
    },
    strand() {
      frozen = false;
    },
    close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream?.destroy();
      }
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

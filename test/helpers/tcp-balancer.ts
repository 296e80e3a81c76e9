/**
 * A tiny TCP round-robin balancer on 127.0.0.1 port 0, as an L4 balancer
 * in front of several instances behaves: each client connection goes to the
 * next backend that accepts one (backends refusing connections are skipped),
 * bytes are copied both ways, and a client's connection is reset when its
 * backend's dies, so the client sees the failure instead of a hang.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export type TcpBalancer = {
  /** http://127.0.0.1:PORT, the one address of every backend. */
  url: string;
  /** Client connections that were reset because their backend failed. */
  resets(): number;
  close(): Promise<void>;
};

/** Balance over backends given as ports on 127.0.0.1. */
export async function startTcpBalancer(ports: readonly number[]): Promise<TcpBalancer> {
  let next = 0;
  let resets = 0;
  const open = new Set<Socket>();

  /** Connect to the next backend that accepts, trying each at most once; undefined when none. */
  function pick(tried: number, done: (backend: Socket | undefined) => void): void {
    if (tried >= ports.length) {
      done(undefined);
      return;
    }
    const port = ports[next++ % ports.length] as number;
    const backend = connect({ host: '127.0.0.1', port });
    const refused = () => pick(tried + 1, done);
    backend.once('error', refused);
    backend.once('connect', () => {
      backend.off('error', refused);
      done(backend);
    });
  }

  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => undefined);
    pick(0, (backend) => {
      if (!backend) {
        client.resetAndDestroy();
        return;
      }
      if (client.destroyed) {
        backend.destroy();
        return;
      }
      open.add(backend);
      backend.on('close', () => open.delete(backend));
      // A backend that closes passes its FIN on (the pipe ends the client); one that fails
      // (reset, crashed mid-write) resets the client's connection.
      backend.on('error', () => {
        if (!client.destroyed) {
          resets++;
          client.resetAndDestroy();
        }
      });
      client.on('close', () => backend.destroy());
      client.pipe(backend);
      backend.pipe(client);
      client.resume();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    resets: () => resets,
    close() {
      for (const socket of open) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

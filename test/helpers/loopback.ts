/**
 * A test's own HTTP server on 127.0.0.1, on a free port: listening, its address, and a close
 * that drops its open connections (a held or trickling answer would keep close() waiting).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Listening = { port: number; close(): Promise<void> };

/** Listen on 127.0.0.1 port 0 and say where. */
export async function listenLoopback(server: Server): Promise<Listening> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * An upstream (a runner or a channel) that answers a request with a JSON body of `bytes`
 * written as one-byte chunks, all at once, then closes: the answer shape the outbound
 * fragment guard holds a turn past its bound of tiny pieces.
 */
import { type AddressInfo, createServer, type Socket } from 'node:net';

export type TinyChunkUpstream = { port: number; close(): Promise<void> };

/** Start it on 127.0.0.1 (free port). */
export async function startTinyChunkUpstream(bytes: number): Promise<TinyChunkUpstream> {
  const sockets = new Set<Socket>();
  const upstream = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('data', () => {
      const body = `{"reply":"${'x'.repeat(bytes - 12)}"}`;
      let frames =
        'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n';
      for (const c of body) frames += `1\r\n${c}\r\n`;
      socket.end(`${frames}0\r\n\r\n`);
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  return {
    port: (upstream.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        upstream.close(() => resolve());
      }),
  };
}

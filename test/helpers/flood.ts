/**
 * A local HTTP server standing in for a hostile upstream: after reading each
 * request it answers with a prefix and then filler, streamed with
 * backpressure up to `totalBytes` (800 MB by default: "endless" for any
 * client that reads it all). It records, per request, how many bytes it got
 * to write and whether the client went away before the end, which is how a
 * test sees that an answer was cut at the cap instead of being buffered.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FloodRequest = {
  url: string;
  /** Bytes of answer body handed to the socket before it closed or the flood ended. */
  written: number;
  /** The client closed the connection before the whole answer was written. */
  aborted: boolean;
  /** The exchange is over (ended or aborted). */
  closed: boolean;
};

export type FloodOptions = {
  status?: number;
  /** Sent as content-length when set (a lie the client must not trust); else chunked. */
  declaredLength?: number;
  /** The start of the body, e.g. `{"reply":"` so the answer looks like the real thing. */
  prefix?: string;
  totalBytes?: number;
  /** After `totalBytes`, cut the connection instead of ending the answer (it breaks off). */
  breakOff?: boolean;
};

export type Flood = { url: string; requests: FloodRequest[]; close(): Promise<void> };

const CHUNK = Buffer.alloc(64 * 1024, 'a');

/** Start a flooding server on 127.0.0.1 (free port). */
export async function startFlood(options: FloodOptions = {}): Promise<Flood> {
  const total = options.totalBytes ?? 800 * 1024 * 1024;
  const requests: FloodRequest[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const record: FloodRequest = {
        url: req.url ?? '',
        written: 0,
        aborted: false,
        closed: false,
      };
      requests.push(record);
      res.on('close', () => {
        record.aborted = !res.writableFinished;
        record.closed = true;
      });
      res.writeHead(options.status ?? 200, {
        'content-type': 'application/json',
        ...(options.declaredLength !== undefined && { 'content-length': options.declaredLength }),
      });
      const write = () => {
        while (!res.destroyed && record.written < total) {
          const next = record.written === 0 && options.prefix ? Buffer.from(options.prefix) : CHUNK;
          const chunk = next.subarray(0, total - record.written);
          record.written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', write);
            return;
          }
        }
        if (res.destroyed) return;
        // end(), not destroy(): what was written goes out first, then the connection ends.
        if (options.breakOff) res.socket?.end();
        else res.end();
      };
      write();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

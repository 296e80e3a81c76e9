/**
 * A local HTTP server standing in for a hosted API in tests: it records
 * every request (method, path with query, headers, raw and parsed body) and
 * answers with whatever the test's handler returns.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type RecordedRequest = {
  method: string;
  /** Path with query string, as sent. */
  url: string;
  headers: IncomingHttpHeaders;
  raw: string;
  /** The body parsed as JSON when it is JSON, else undefined. */
  json: unknown;
};

export type StandInReply = {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  delayMs?: number;
};

export type StandIn = {
  url: string;
  requests: RecordedRequest[];
  /** Replace the handler (e.g. to switch to a rate-limit answer). */
  respond(handler: (req: RecordedRequest) => StandInReply): void;
  close(): Promise<void>;
};

/** Start a stand-in on 127.0.0.1 (free port). */
export async function startStandIn(
  handler: (req: RecordedRequest) => StandInReply,
): Promise<StandIn> {
  let current = handler;
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      raw += chunk;
    });
    req.on('end', () => {
      let json: unknown;
      try {
        json = raw ? JSON.parse(raw) : undefined;
      } catch {
        json = undefined;
      }
      const recorded = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        raw,
        json,
      };
      requests.push(recorded);
      const reply = current(recorded);
      const send = () => {
        const body =
          reply.body === undefined
            ? ''
            : typeof reply.body === 'string'
              ? reply.body
              : JSON.stringify(reply.body);
        res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
        res.end(body);
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    respond(next) {
      current = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

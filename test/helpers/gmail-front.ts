/**
 * Gmail (the stand-in) behind a front on 127.0.0.1 that a test scripts: `intercept` may answer
 * a request itself (a quota, a refused fetch) and returns true then; every other request is
 * passed through to the stand-in as sent, its answer passed back.
 */
import {
  createServer,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

export type GmailFront = { url: string; server: Server; close(): Promise<void> };

/** Start the front before `target` (the stand-in's API base URL). */
export async function startGmailFront(
  target: string,
  intercept: (req: IncomingMessage, res: ServerResponse) => boolean,
): Promise<GmailFront> {
  const base = new URL(target);
  const server = createServer((req, res) => {
    if (intercept(req, res)) return;
    const upstream = request(
      {
        host: base.hostname,
        port: base.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The message id a request fetches (`.../messages/<id>`), or undefined for any other call. */
export function fetchedMessage(req: IncomingMessage): string | undefined {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  const id = /\/messages\/([^/]+)$/.exec(path)?.[1];
  return id === undefined ? undefined : decodeURIComponent(id);
}

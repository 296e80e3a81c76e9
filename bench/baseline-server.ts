/**
 * The benchmark's reference point: a raw node:http server that reads the
 * body, JSON.parses it and answers 200 with a small JSON body. It imports
 * nothing from hookgate.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const OK_BODY = JSON.stringify({ ok: true });
export const BAD_BODY = JSON.stringify({ ok: false });

/** A JSON answer, as both reference servers send it. */
export function answer(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    try {
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      answer(res, 400, BAD_BODY);
      return;
    }
    answer(res, 200, OK_BODY);
  });
}

/** Start the baseline on 127.0.0.1 (free port); resolves with its URL. */
export async function startBaseline(): Promise<string> {
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * Raw HTTP requests for cases fetch cannot express: lying Content-Length,
 * chunked uploads without end, slow bodies, invalid bytes, connections held
 * open.
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { waitFor } from './runtime.ts';

export type RawResponse = {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
};

/** Send a POST whose body is written chunk by chunk, with optional pauses; resolves on the response. */
export function rawPost(
  url: string,
  options: {
    /** An array sends the header once per value. */
    headers?: Record<string, string | number | string[]>;
    chunks?: Array<Buffer | string | { pauseMs: number }>;
    end?: boolean;
  },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: options.headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (chunk: Buffer) => parts.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(parts).toString('utf8'),
        }),
      );
      res.on('error', reject);
    });
    // The server may answer and close before the upload ends.
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err);
    });
    (async () => {
      for (const chunk of options.chunks ?? []) {
        if (typeof chunk === 'object' && 'pauseMs' in chunk) {
          await new Promise((r) => setTimeout(r, chunk.pauseMs));
        } else if (!req.destroyed) {
          req.write(chunk);
        }
      }
      if (options.end !== false && !req.destroyed) req.end();
    })().catch(reject);
  });
}

/**
 * Write raw request bytes on a fresh connection and return everything the
 * server answered up to its first final (non-1xx) response. `afterContinue`
 * is written once a `100 Continue` arrives, as a client that waits would.
 */
export function rawExchange(
  url: string,
  request: string | Buffer,
  afterContinue?: string,
): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    let continued = false;
    const finish = () => {
      socket.destroy();
      resolve(text);
    };
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (
        !continued &&
        afterContinue !== undefined &&
        /^HTTP\/1\.1 100 [^\r]*\r\n\r\n/.test(text)
      ) {
        continued = true;
        socket.write(afterContinue);
      }
      if (finalResponseComplete(text)) finish();
    });
    socket.on('end', finish);
    socket.on('error', reject);
    socket.write(request);
  });
}

function finalResponseComplete(text: string): boolean {
  const start = text.search(/HTTP\/1\.1 [2-5]\d\d /);
  if (start < 0) return false;
  const headEnd = text.indexOf('\r\n\r\n', start);
  if (headEnd < 0) return false;
  const length = /\r\ncontent-length: (\d+)/i.exec(text.slice(start, headEnd));
  return text.length - (headEnd + 4) >= Number(length?.[1] ?? 0);
}

/**
 * Write all requests at once on a fresh connection and return everything the server sent
 * until it closed the connection (the last request should ask for `Connection: close`, or be
 * one the server closes after).
 */
export function pipelined(url: string, requests: readonly string[]): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(requests.join('')));
    const parts: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => parts.push(chunk));
    socket.on('close', () => resolve(Buffer.concat(parts).toString('latin1')));
    socket.on('error', reject);
  });
}

/** A client connection that records what it received and whether it closed. */
export type RecordingClient = { socket: Socket; received: () => string; closed: () => boolean };

/** Open a connection to `url` that records what it receives; an error counts as a close. */
export function openRecording(url: string): RecordingClient {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let received = '';
  let closed = false;
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    closed = true;
  });
  return { socket, received: () => received, closed: () => closed };
}

/**
 * Write `request` on the connection (unless it closed): true once an HTTP answer came after
 * it, false if the connection closed unanswered.
 */
export async function answeredOn(client: RecordingClient, request: string): Promise<boolean> {
  const before = client.received().length;
  if (!client.closed()) client.socket.write(request);
  const outcome = await waitFor(
    'an answer or the connection to close',
    () => {
      if (client.received().slice(before).includes('HTTP/1.1 ')) return 'answered';
      return client.closed() ? 'closed' : undefined;
    },
    30_000,
  );
  return outcome === 'answered';
}

/** The final answer in raw response text: status, lower-cased headers, JSON body ({} if none). */
export function parseAnswer(text: string): {
  status: number;
  statusLine: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
} {
  const start = text.search(/HTTP\/1\.1 [2-5]\d\d /);
  const headEnd = text.indexOf('\r\n\r\n', start);
  const [statusLine = '', ...lines] = text.slice(start, headEnd).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const body = text.slice(headEnd + 4);
  return {
    status: Number(statusLine.split(' ')[1]),
    statusLine,
    headers,
    body: body ? (JSON.parse(body) as Record<string, unknown>) : {},
  };
}

/** Every answer in raw response text (pipelined), in order: status and body by Content-Length. */
export function parseAnswers(text: string): Array<{ status: number; body: string }> {
  const out: Array<{ status: number; body: string }> = [];
  let at = 0;
  while (at < text.length) {
    const head = text.indexOf('\r\n\r\n', at);
    if (head < 0) break;
    const lines = text.slice(at, head).split('\r\n');
    const status = Number(lines[0]?.split(' ')[1]);
    const length = Number(
      lines.find((line) => line.toLowerCase().startsWith('content-length:'))?.split(':')[1] ?? 0,
    );
    out.push({ status, body: text.slice(head + 4, head + 4 + length) });
    at = head + 4 + length;
  }
  return out;
}

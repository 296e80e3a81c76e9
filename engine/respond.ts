/**
 * Writing responses: every body is JSON, every response carries x-request-id.
 */
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ERRORS, type ErrorCode, type HookError } from './errors.ts';

const JSON_TYPE = 'application/json; charset=utf-8';
const NO_HEADERS: readonly string[] = Object.freeze([]);
/** The header that closes the connection after the response (a list's extra, as sendJson takes). */
export const CLOSE: readonly string[] = Object.freeze(['connection', 'close']);

/**
 * Send a JSON body that is already serialised. Headers go to Node as one flat name/value
 * list: no header object is built and walked per response. `extra` never names the three
 * headers set here (a list, unlike an object, would send such a header twice).
 */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  requestId: string,
  extra: readonly string[] = NO_HEADERS,
): void {
  const head = [
    'content-type',
    JSON_TYPE,
    'content-length',
    String(Buffer.byteLength(body)),
    'x-request-id',
    requestId,
  ];
  for (let i = 0; i < extra.length; i++) head.push(extra[i] as string);
  res.writeHead(status, head);
  res.end(body);
}

/** Send a plain-text body (a handshake's echoed challenge), never sniffed as HTML. */
export function sendText(
  res: ServerResponse,
  status: number,
  body: string,
  requestId: string,
  extra: readonly string[] = NO_HEADERS,
): void {
  res.writeHead(status, [
    'content-type',
    'text/plain; charset=utf-8',
    'content-length',
    String(Buffer.byteLength(body)),
    'x-content-type-options',
    'nosniff',
    'x-request-id',
    requestId,
    ...extra,
  ]);
  res.end(body);
}

/** Send a status without a body (204). */
export function sendEmpty(
  res: ServerResponse,
  status: number,
  requestId: string,
  extra: readonly string[] = NO_HEADERS,
): void {
  res.writeHead(status, ['x-request-id', requestId, ...extra]);
  res.end();
}

/** Send an error; with `close`, the connection is closed after it (body left unread). */
export function sendError(
  res: ServerResponse,
  error: HookError,
  requestId: string,
  close: boolean,
): void {
  const head = error.flatHeaders();
  sendJson(res, error.status, error.toJson(), requestId, close ? [...head, ...CLOSE] : head);
}

/**
 * Answer a request Node's HTTP parser refused (malformed, oversized headers, timeout) with JSON;
 * `extra` (a flat name/value list, fixed by the listener) are headers its other answers carry.
 */
export function answerClientError(
  socket: Duplex,
  code: string | undefined,
  extra: readonly string[] = NO_HEADERS,
): { status: number; code: ErrorCode; requestId: string } | undefined {
  if (!socket.writable) {
    socket.destroy();
    return undefined;
  }
  const errorCode: ErrorCode =
    code === 'HPE_HEADER_OVERFLOW'
      ? 'headers_too_large'
      : code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? 'request_timeout'
        : 'bad_request';
  const { status, message } = ERRORS[errorCode];
  const body = JSON.stringify({ ok: false, error: { code: errorCode, message } });
  const requestId = randomUUID();
  let head = '';
  for (let i = 0; i + 1 < extra.length; i += 2) head += `${extra[i]}: ${extra[i + 1]}\r\n`;
  endAndClose(
    socket,
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\n${head}connection: close\r\n\r\n${body}`,
  );
  return { status, code: errorCode, requestId };
}

/**
 * Write the last bytes of a connection and close it once they are out, not when the peer closes
 * its side: such a socket is past node:http's timeouts, so a peer that never closed would keep it
 * (and its place under the connection caps) for ever.
 */
function endAndClose(socket: Duplex, last?: string): void {
  socket.once('finish', () => socket.destroy());
  socket.end(last);
}

/**
 * A response on a socket node:http has handed over (CONNECT): the one answer on it, after which
 * the socket is closed. Node sends no further request on such a socket.
 */
export function responseOnDetached(req: IncomingMessage, socket: Duplex): ServerResponse {
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket as Parameters<ServerResponse['assignSocket']>[0]);
  res.on('finish', () => endAndClose(socket));
  return res;
}

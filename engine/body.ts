/**
 * The body stage: read the request body under a size limit (Content-Length
 * first, then while streaming) and a time limit, then check UTF-8, bound the
 * nesting depth before parsing, and parse a JSON object.
 */
import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { collectBytes } from './byte-collector.ts';
import { createDeadlines, type Deadlines } from './deadlines.ts';
import { HookError } from './errors.ts';
import { BackslashKeyError, parseForeignJson } from './foreign-json.ts';
import { createPieceCounter, MIN_AVERAGE_PIECE, smallPiecesAllowed } from './piece-rate.ts';

export type BodyLimits = { maxBytes: number; timeoutMs: number };

// One timer per time limit in use, not one per read (engine/deadlines.ts).
const deadlinesByTimeout = new Map<number, Deadlines>();

function deadlinesOf(timeoutMs: number): Deadlines {
  let deadlines = deadlinesByTimeout.get(timeoutMs);
  if (!deadlines) {
    deadlines = createDeadlines(timeoutMs);
    deadlinesByTimeout.set(timeoutMs, deadlines);
  }
  return deadlines;
}

// The test node:http uses to raise `checkContinue` (a list such as `100-continue, foo` too).
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

/** True when the request asks for 100 Continue before sending its body. */
export function expectsContinue(headers: IncomingHttpHeaders): boolean {
  const expect = headers.expect;
  return expect !== undefined && CONTINUE.test(expect);
}

/**
 * True when the client waits for 100 Continue: an HTTP/1.1 request that asks for it. RFC 9110
 * 10.1.1: an expectation in an HTTP/1.0 request is ignored, and no 1xx goes to such a client
 * (it could take the 100 for its answer). Other versions are refused before (framing.ts).
 */
export function waitsForContinue(request: {
  httpVersion?: string | undefined;
  headers: IncomingHttpHeaders;
}): boolean {
  return request.httpVersion === '1.1' && expectsContinue(request.headers);
}

/**
 * Body reads the HTTP parser ended: once node:http's parser refuses the rest of a request's body
 * (a bad chunk size, a huge trailer), the request stream gets no more data, no end and no error
 * (the listener's `clientError` handles it), so its read waited for the body time limit and the
 * client got 408 where the message was malformed. The listener breaks the read instead.
 */
const bodyBreaks = new WeakMap<IncomingMessage, (() => void) | 'broken'>();

const malformed = () => new HookError('bad_request');

/** The parser refused the rest of `req`'s body: its read (now or when it starts) fails with 400. */
export function breakBodyRead(req: IncomingMessage): void {
  const pending = bodyBreaks.get(req);
  if (typeof pending === 'function') pending();
  else bodyBreaks.set(req, 'broken');
}

/**
 * Read the whole body, refusing it past `maxBytes` or after `timeoutMs` (watched by
 * `deadlines`, by default the process's one set for that limit). A client that waits
 * (`Expect: 100-continue`) is told to send it on `res` once its declared length fits.
 */
export function readBody(
  req: IncomingMessage,
  limits: BodyLimits,
  deadlines: Deadlines = deadlinesOf(limits.timeoutMs),
  res?: ServerResponse,
): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limits.maxBytes) {
    return Promise.reject(tooLarge(limits.maxBytes));
  }
  if (bodyBreaks.get(req) === 'broken') return Promise.reject(malformed());
  if (res && waitsForContinue(req)) res.writeContinue();
  return new Promise((resolve, reject) => {
    // One buffer that grows by doubling, not the chunks as they came: a body trickled a byte
    // per packet held a Buffer object per byte (about 370 bytes each).
    const collected = collectBytes(limits.maxBytes);
    const watch = deadlines.watch(() => finish(new HookError('request_timeout')));
    // Only a chunked body: a Content-Length body's pieces are the network's.
    const inAll = smallPiecesAllowed(limits.maxBytes);
    const tooFragmented =
      req.headers['transfer-encoding'] !== undefined ? createPieceCounter(inAll) : undefined;
    let done = false;
    let refused = false;
    function finish(error: HookError | null): void {
      if (done) return;
      done = true;
      refused = error !== null;
      bodyBreaks.delete(req);
      deadlines.cancel(watch);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (error) {
        // Stop reading; the caller answers and closes the connection. The socket too: node:http
        // reads it on until the request's own buffer is full (16 KiB of body, some 2,700
        // one-byte chunks parsed for each KiB kept), and the answer waits for the event loop's
        // turn, while libuv reads on (up to 32 x 64 KiB per turn).
        req.pause();
        req.socket?.pause();
        reject(error);
      } else {
        resolve(collected.bytes());
      }
    }
    function onData(chunk: Buffer): void {
      if (!collected.add(chunk)) {
        finish(tooLarge(limits.maxBytes));
        return;
      }
      const verdict = tooFragmented?.(chunk.length);
      const refuse =
        verdict === 'refuse' || (verdict === 'pause' && !pauseForATurn(req.socket, () => !refused));
      if (refuse) {
        finish(
          new HookError(
            'body_too_fragmented',
            `The chunked body came in more than ${inAll} chunks averaging under ${MIN_AVERAGE_PIECE} bytes.`,
          ),
        );
      }
    }
    const onEnd = () => finish(null);
    const onError = (err: Error) =>
      finish(new HookError('invalid_json', 'The body could not be read.', { cause: err }));
    const onClose = () => {
      if (!req.complete)
        finish(new HookError('invalid_json', 'The client closed the connection mid-body.'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
    bodyBreaks.set(req, () => finish(malformed()));
  });
}

/**
 * node:http's own mark on a socket it holds back (pipelining): its reads do not restart it, and
 * it pauses the socket's parser after the bytes in hand (resumed with the mark cleared).
 */
type HeldSocket = Socket & { _paused?: unknown; parser?: { resume(): void } | null };

/**
 * Read no more of the connection until the next turn of the event loop (what the parser already
 * holds of the current read is still handed over). A plain pause is undone in the same turn:
 * the request stream restarts its socket whenever its own buffer runs low, unless node:http has
 * marked the socket held back, as it does between pipelined requests; that mark is set here too.
 * false when this Node has no such mark (the caller refuses the body instead).
 */
function pauseForATurn(socket: Socket | null | undefined, resume: () => boolean): boolean {
  const held = socket as HeldSocket | null | undefined;
  if (!held || typeof held._paused !== 'boolean') return false;
  if (held._paused) return true;
  held._paused = true;
  held.pause();
  setImmediate(() => {
    // Unless the body was refused (its reading stays stopped): a body that ended meanwhile
    // leaves a keep-alive connection that must read its next request.
    if (!resume()) return;
    held._paused = false;
    held.parser?.resume();
    if (!held.destroyed) held.resume();
  });
  return true;
}

function tooLarge(maxBytes: number): HookError {
  return new HookError(
    'payload_too_large',
    `The request body exceeds ${maxBytes} bytes (hooks.maxBodyBytes).`,
  );
}

/** Parse a body as a JSON object, refusing bad UTF-8, deep nesting and non-objects. */
export function parseJsonObject(body: Buffer, maxDepth: number): Record<string, unknown> {
  if (body.length === 0)
    throw new HookError('invalid_json', 'The body is empty; send a JSON object.');
  if (!isUtf8(body)) throw new HookError('invalid_json', 'The body is not valid UTF-8.');
  // Bounded before parsing: JSON.parse of deep nesting is slow and later walks overflow the stack.
  if (nestingDepth(body, maxDepth) > maxDepth) {
    throw new HookError('invalid_json', `The JSON is nested deeper than ${maxDepth} levels.`);
  }
  let value: unknown;
  try {
    value = parseForeignJson(body.toString('utf8'));
  } catch (err) {
    if (err instanceof BackslashKeyError)
      throw new HookError(
        'invalid_json',
        'The JSON has a key holding a backslash; such keys are refused (after one, the JSON parser can misread escaped keys of later bodies).',
      );
    throw new HookError('invalid_json', 'The body is not valid JSON.', { cause: err });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new HookError('invalid_json', 'The body must be a JSON object.');
  }
  return value as Record<string, unknown>;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** Deepest nesting of objects and arrays, ignoring brackets inside strings; stops past `stopAbove`. */
export function nestingDepth(body: Uint8Array, stopAbove: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) {
      inString = true;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > stopAbove) return deepest;
      }
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
    }
  }
  return deepest;
}

/**
 * The dispatcher of hookgate's outbound calls: undici's own, with the answer's body pieces
 * counted as its parser hands them over. A peer that chunks its answer a byte per chunk has
 * each piece parsed and passed up one by one (six wire bytes a piece, so a 1 MiB cap is six
 * MiB on the wire and about a million callbacks); the pieces reach the caller's reader
 * coalesced, so only here can they be seen. Past a request body's bounds (piece-rate.ts, the
 * whole-answer one from the call's byte cap) the parser is held until the next turn of the
 * event loop, or the call is aborted with FragmentedAnswerError.
 *
 * The answer's bytes on the wire are bounded too. The parser passes some up as nothing at all:
 * a status line's reason phrase, the blanks before a header's value, a chunk's extension, a
 * 1xx answer's headers. A peer that sent those without end was read until the call's timeout
 * (a gigabyte in two seconds on loopback); past the bound its connection is destroyed with
 * WireFloodError.
 */
import type { Socket } from 'node:net';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { createPieceCounter, smallPiecesAllowed } from '../piece-rate.ts';

/** The answer's body came in too many tiny pieces; `code` is what callers test. */
export class FragmentedAnswerError extends Error {
  readonly code = 'ANSWER_TOO_FRAGMENTED';
  constructor() {
    super('the answer came in too many tiny pieces');
    this.name = 'FragmentedAnswerError';
  }
}

/** The answer's bytes on the wire passed what any answer within the call's caps takes. */
export class WireFloodError extends Error {
  readonly code = 'ANSWER_WIRE_FLOOD';
  /** The answer's bytes on the wire when it was stopped. */
  readonly received: number;
  constructor(received: number) {
    super("the answer's bytes on the wire passed their bound");
    this.name = 'WireFloodError';
    this.received = received;
  }
}

/**
 * Most bytes an answer of at most `maxBytes` may take on the wire: its body; the framing of
 * as many chunks as the piece counter lets through (a chunk of a byte is six bytes on the
 * wire); and 64 KiB for the status line, the headers and the trailers (16 KiB each at most).
 * No answer the other bounds take is stopped by this one.
 */
function wireBytesAllowed(maxBytes: number): number {
  return maxBytes + 6 * smallPiecesAllowed(maxBytes) + 65_536;
}

/**
 * Counts what `socket` reads for each answer (from the first read after a request was written:
 * one answer at a time, as undici does not pipeline) and destroys it past `maxWireBytes`. The
 * count is of bytes received, not of chunks read: a chunk the parser puts back is read again.
 */
function boundWire(socket: Socket, maxWireBytes: number): void {
  let written = socket.bytesWritten;
  let answerFrom = socket.bytesRead;
  let read = answerFrom;
  // Paused first: a data listener would otherwise set the socket flowing before undici's
  // readable listener takes it over, and undici's own pauses would not hold.
  socket.pause();
  socket.on('data', () => {
    if (socket.bytesWritten !== written) {
      written = socket.bytesWritten;
      answerFrom = read;
    }
    read = socket.bytesRead;
    if (read - answerFrom > maxWireBytes) socket.destroy(new WireFloodError(read - answerFrom));
  });
}

/**
 * undici's connector with each connection's answers bounded on the wire. HTTP/1.1 only: over
 * HTTP/2 several answers share a connection in frames node:http2 reads, and a peer could send
 * DATA frames of padding alone without end (a gigabyte until the timeout, nothing counted as
 * body), so HTTP/2 is not offered; every provider and runner speaks HTTP/1.1.
 */
function boundedConnector(maxWireBytes: number): buildConnector.connector {
  const connect = buildConnector({ allowH2: false });
  return (options, callback) =>
    connect(options, (...answer) => {
      const socket = answer[1];
      if (socket) boundWire(socket, maxWireBytes);
      callback(...answer);
    });
}

type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;

/**
 * The controller as the caller's handler sees it: its resume waits while the guard holds the
 * parser (undici's body stream resumes whenever its reader drains, which would undo the hold in
 * the same turn); the guard's own resume then does it.
 */
function holdable(controller: Controller) {
  let held = false;
  // The caller's own pause (its reader is behind), kept through the guard's hold.
  let callerPaused = false;
  const view = new Proxy(controller, {
    get(target, property) {
      if (property === 'pause')
        return () => {
          callerPaused = true;
          target.pause();
        };
      if (property === 'resume')
        return () => {
          callerPaused = false;
          if (!held) target.resume();
        };
      const value: unknown = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    view,
    hold() {
      if (held) return;
      // Also when the caller has just paused (its reader is behind): its resume, in this same
      // turn, waits for the hold's end like any other.
      held = true;
      if (!controller.paused) controller.pause();
      setImmediate(() => {
        held = false;
        if (!callerPaused && !controller.aborted) controller.resume();
      });
    },
  };
}

/** Forwards everything to the caller's handler, counting the answer's body pieces on the way. */
function countingHandler(inner: Handler, maxInAll: number): Handler {
  const tooFragmented = createPieceCounter(maxInAll);
  let control: ReturnType<typeof holdable> | undefined;
  let stopped = false;
  const viewOf = (controller: Controller) => {
    // A call that failed before it started may be told so without a controller.
    if (controller === null || typeof controller !== 'object') return controller;
    control ??= holdable(controller);
    return control.view;
  };
  return {
    onRequestStart: (controller, context) => inner.onRequestStart?.(viewOf(controller), context),
    onRequestUpgrade: (controller, status, headers, socket) =>
      inner.onRequestUpgrade?.(viewOf(controller), status, headers, socket),
    onResponseStart: (controller, status, headers, message) =>
      inner.onResponseStart?.(viewOf(controller), status, headers, message),
    onResponseData(controller: Controller, chunk: Buffer) {
      if (stopped) return;
      const verdict = tooFragmented(chunk.length);
      if (verdict === 'refuse') {
        stopped = true;
        // Destroys the socket: the parser stops at its next piece instead of reading the rest.
        controller.abort(new FragmentedAnswerError());
        return;
      }
      inner.onResponseData?.(viewOf(controller), chunk);
      // The parser stops at this piece and goes on in the next turn of the event loop.
      if (verdict === 'pause') control?.hold();
    },
    onResponseEnd: (controller, trailers) => {
      stopped = true;
      inner.onResponseEnd?.(viewOf(controller), trailers);
    },
    onResponseError: (controller, err) => {
      stopped = true;
      inner.onResponseError?.(viewOf(controller), err);
    },
  };
}

/** A guarded pool of connections for answers of one byte cap, and how to close it. */
export type GuardedDispatcher = {
  dispatcher: Dispatcher;
  /** Close its connections once the calls it carries have ended (undici's graceful close). */
  close(): Promise<void>;
};

/**
 * undici's Agent (its defaults) with every answer's pieces counted and its bytes on the wire
 * bounded, for answers of `maxBytes`.
 */
export function createGuardedDispatcher(maxBytes: number): GuardedDispatcher {
  const maxInAll = smallPiecesAllowed(maxBytes);
  const agent = new Agent({
    allowH2: false,
    connect: boundedConnector(wireBytesAllowed(maxBytes)),
  });
  const dispatcher = agent.compose(
    (dispatch) => (options, handler) => dispatch(options, countingHandler(handler, maxInAll)),
  );
  return { dispatcher, close: () => agent.close() };
}

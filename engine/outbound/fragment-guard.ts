/**
 * The dispatcher of hookgate's outbound calls: undici's own, with the answer's body pieces
 * counted as its parser hands them over. A peer that chunks its answer a byte per chunk has
 * each piece parsed and passed up one by one (six wire bytes a piece, so a 1 MiB cap is six
 * MiB on the wire and about a million callbacks); the pieces reach the caller's reader
 * coalesced, so only here can they be seen. Past a request body's bounds (piece-rate.ts, the
 * whole-answer one from the call's byte cap) the parser is held until the next turn of the
 * event loop, or the call is aborted with FragmentedAnswerError.
 */
import { Agent, type Dispatcher } from 'undici';
import { createPieceCounter, smallPiecesAllowed } from '../piece-rate.ts';

/** The answer's body came in too many tiny pieces; `code` is what callers test. */
export class FragmentedAnswerError extends Error {
  readonly code = 'ANSWER_TOO_FRAGMENTED';
  constructor() {
    super('the answer came in too many tiny pieces');
    this.name = 'FragmentedAnswerError';
  }
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

// One agent (one pool of connections) for every call; a composed view of it per byte cap.
const agent = new Agent();
const byCap = new Map<number, Dispatcher>();

/** undici's Agent (its defaults) with every answer's pieces counted, for answers of `maxBytes`. */
export function guardedDispatcher(maxBytes: number): Dispatcher {
  let dispatcher = byCap.get(maxBytes);
  if (!dispatcher) {
    const maxInAll = smallPiecesAllowed(maxBytes);
    dispatcher = agent.compose(
      (dispatch) => (options, handler) => dispatch(options, countingHandler(handler, maxInAll)),
    );
    byCap.set(maxBytes, dispatcher);
  }
  return dispatcher;
}

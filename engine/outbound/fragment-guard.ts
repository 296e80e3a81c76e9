/**
 * The dispatcher of hookgate's outbound calls: undici's own, with the answer's body pieces
 * counted as its parser hands them over. A peer that chunks its answer a byte per chunk has
 * each piece parsed and passed up one by one (six wire bytes a piece, so a 1 MiB cap is six
 * MiB on the wire and about a million callbacks); the pieces reach the caller's reader
 * coalesced, so only here can they be seen. Past the same bounds as a request body's pieces
 * (piece-rate.ts) the parser is paused until the next turn, or the call is aborted with
 * FragmentedAnswerError.
 */
import { Agent, type Dispatcher } from 'undici';
import { createPieceCounter } from '../piece-rate.ts';

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

/** Forwards everything to the caller's handler, counting the answer's body pieces on the way. */
function countingHandler(inner: Handler): Handler {
  const tooFragmented = createPieceCounter();
  let stopped = false;
  return {
    onRequestStart: (controller, context) => inner.onRequestStart?.(controller, context),
    onRequestUpgrade: (controller, status, headers, socket) =>
      inner.onRequestUpgrade?.(controller, status, headers, socket),
    onResponseStart: (controller, status, headers, message) =>
      inner.onResponseStart?.(controller, status, headers, message),
    onResponseData(controller: Controller, chunk: Buffer) {
      if (stopped) return;
      const verdict = tooFragmented(chunk.length);
      if (verdict === 'refuse') {
        stopped = true;
        // Destroys the socket: the parser stops at its next piece instead of reading the rest.
        controller.abort(new FragmentedAnswerError());
        return;
      }
      inner.onResponseData?.(controller, chunk);
      if (verdict === 'pause' && !controller.paused) {
        // The parser stops at this piece and goes on in the next turn of the event loop.
        controller.pause();
        setImmediate(() => {
          if (!stopped && !controller.aborted) controller.resume();
        });
      }
    },
    onResponseEnd: (controller, trailers) => {
      stopped = true;
      inner.onResponseEnd?.(controller, trailers);
    },
    onResponseError: (controller, err) => {
      stopped = true;
      inner.onResponseError?.(controller, err);
    },
  };
}

/** undici's Agent (its defaults) with every answer's pieces counted. */
export const guardedDispatcher: Dispatcher = new Agent().compose(
  (dispatch) => (options, handler) => dispatch(options, countingHandler(handler)),
);

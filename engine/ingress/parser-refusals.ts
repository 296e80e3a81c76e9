/**
 * Answers to messages Node's HTTP parser refused (malformed, headers too
 * large, too slow), kept in order with the answers their connection still
 * owes. The handler notes each request it is given and when its answer is
 * out; the listener's `clientError` asks here what to do. A refusal written
 * at once while an earlier request's answer was still to come made the
 * client read the 400 as that request's answer (the request itself stored);
 * one written for a request whose answer was already out (its body still
 * being drained) was a second answer to it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { breakBodyRead } from '../body.ts';
import { answerClientError } from '../respond.ts';

/** What a connection owes: answers not yet out, and the last request handed over. */
type Owed = {
  open: number;
  last: IncomingMessage;
  /** Set once the parser refused a message on it: what to do when `open` reaches 0. */
  afterOwed?: () => void;
};

const owedBy = new WeakMap<object, Owed>();

/** What was to follow the owed answers has run (the decision stays taken). */
const SPENT = (): void => undefined;

/** Note a request handed to the stages: its connection owes its answer until the response closes. */
export function owesAnswer(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket;
  const owed = owedBy.get(socket);
  if (owed) {
    owed.open++;
    owed.last = req;
  } else {
    owedBy.set(socket, { open: 1, last: req });
  }
  // One listener function for every response (no closure per request); a response closes once.
  res.on('close', answerOut);
}

/** A response closed: its connection owes one answer less. */
function answerOut(this: ServerResponse): void {
  const owed = owedBy.get(this.req.socket);
  if (!owed) return;
  owed.open--;
  if (owed.open !== 0 || !owed.afterOwed || owed.afterOwed === SPENT) return;
  // Once: the connection's own answer (a CONNECT's) closes a response too.
  const after = owed.afterOwed;
  owed.afterOwed = SPENT;
  after();
}

/**
 * What to do with a message the parser refused: `answer` it now (nothing is owed before it);
 * `answer-after` the answers still owed (it came pipelined behind them); `close` the connection
 * (the refused message is a request already handed over whose answer is out: no second
 * answer); `close-after` the answers still owed (its own answer is among them). Pure.
 */
export function planParserRefusal(
  open: number,
  lastIncomplete: boolean,
): 'answer' | 'answer-after' | 'close' | 'close-after' {
  if (lastIncomplete) return open === 0 ? 'close' : 'close-after';
  return open === 0 ? 'answer' : 'answer-after';
}

/** A refusal of the parser's that was answered (it has a request line of its own in the log). */
export type ParserRefusal = { status: number; code: string; requestId: string };

/**
 * The `clientError` listener of a listener, telling `answered` of each refusal written (for the
 * request log line and the metrics: these never reach the request handler). `headers` (a flat
 * name/value list) are those the listener's other answers carry (the admin listener's no-store).
 */
export function refuseMessage(
  socket: Duplex,
  code: string | undefined,
  answered: (refusal: ParserRefusal) => void,
  headers?: readonly string[],
): void {
  const answer = () => {
    const refusal = answerClientError(socket, code, headers);
    if (refusal) answered(refusal);
  };
  const owed = owedBy.get(socket);
  if (!owed) {
    answer();
    return;
  }
  // The parser stays refused: each further chunk from the peer reports again. Decided once.
  if (owed.afterOwed) return;
  const plan = planParserRefusal(owed.open, !owed.last.complete);
  const close = () => socket.destroy();
  // The refused message is the body of a request whose answer is still owed: its read gets no
  // more of it, so it ends now (400) instead of at the body time limit (408).
  if (plan === 'close-after') breakBodyRead(owed.last);
  if (plan === 'answer') answer();
  else if (plan === 'close') close();
  // The answers still owed go first, in order; a response that closed the connection leaves
  // nothing to write after it (answerClientError then only destroys).
  else owed.afterOwed = plan === 'answer-after' ? answer : close;
}

/**
 * Run `take` once the connection owes no answer: a CONNECT takes its socket over from node:http,
 * which cannot be done while an earlier pipelined request's answer still holds it (node throws,
 * and from its parser's callback, which ended the process). A connection that is already to be
 * closed after its answers is closed instead.
 */
export function whenAnswersOut(socket: Duplex, take: () => void): void {
  const owed = owedBy.get(socket);
  if (!owed || owed.open === 0) {
    take();
    return;
  }
  if (owed.afterOwed) {
    socket.destroy();
    return;
  }
  owed.afterOwed = take;
}

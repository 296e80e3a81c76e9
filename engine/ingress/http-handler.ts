/**
 * The node:http request listener: run the stages for each request, write the
 * answer (or the refusal as one JSON error), and log one line per request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { asHookError, HookError, isServerFault } from '../errors.ts';
import { type Logger, requestLineLogger } from '../log.ts';
import { requestFinished } from '../observe/events.ts';
import { CLOSE, sendEmpty, sendError, sendJson, sendText } from '../respond.ts';
import {
  type Answer,
  type Exchange,
  type NamedStage,
  newExchange,
  type Outcome,
  runStages,
} from './exchange.ts';
import { owesAnswer } from './parser-refusals.ts';
import { waitsForContinue } from '../body.ts';
import { headerValues, httpSource } from './request-source.ts';

/** The stages a request runs, held until it is answered (a reload retires them after). */
export type Pipeline = { readonly stages: readonly NamedStage[]; release(): void };

export type HandlerSettings = {
  /** The current configuration's stages; the request keeps them to its end. */
  acquire: () => Pipeline;
  logger: Logger;
  /** True once shutdown began: answers then close their connection (no new keep-alive requests). */
  draining: () => boolean;
};

// Bodies up to this size are drained by Node after a refusal; larger or chunked ones close the connection.
const DRAIN_LIMIT = 65_536;
const REPLAYED: readonly string[] = Object.freeze(['idempotent-replayed', 'true']);
const REPLAYED_CLOSE: readonly string[] = Object.freeze([...REPLAYED, ...CLOSE]);

/** Build the node:http request listener. */
export function createRequestHandler(
  settings: HandlerSettings,
): (req: IncomingMessage, res: ServerResponse) => void {
  const { logger } = settings;
  const lines = requestLineLogger(logger);
  const inCheckPhase = turnBatch((err) =>
    logger.error({ err: (err as Error)?.message }, 'answering a request failed'),
  );

  // `close`: shutdown had begun when the request was settled: no further keep-alive request.
  function answer(res: ServerResponse, x: Exchange, result: Answer, close: boolean): void {
    x.log['status'] = result.status;
    if (result.kind === 'empty') sendEmpty(res, 204, x.id, close ? CLOSE : undefined);
    else if (result.kind === 'text')
      sendText(res, result.status, result.body, x.id, close ? CLOSE : undefined);
    else {
      let extra = result.replayed ? REPLAYED : undefined;
      if (close) extra = extra ? REPLAYED_CLOSE : CLOSE;
      sendJson(res, result.status, result.body, x.id, extra);
    }
  }

  function fail(
    req: IncomingMessage,
    res: ServerResponse,
    x: Exchange,
    err: unknown,
    draining: boolean,
  ): void {
    const error = asHookError(err);
    x.log['status'] = error.status;
    x.log['code'] = error.code;
    if (isServerFault(error))
      logger.error(
        { requestId: x.id, code: error.code, err: describeCause(error) },
        'request failed',
      );
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendError(res, error, x.id, draining || mustClose(req, error));
  }

  return function handleRequest(req, res) {
    const started = performance.now();
    // A message the parser refuses later on this connection is answered after this one.
    owesAnswer(req, res);
    const source = httpSource(req, res);
    const x = newExchange(source, headerValues(req.rawHeaders));
    x.log['requestId'] = x.id;
    x.log['client'] = req.socket.remoteAddress ?? '';
    x.log['status'] = 0;
    // Per-stage timings only when the log line will carry them (debug): none at info.
    const pipeline = settings.acquire();
    function finish(): void {
      for (const release of x.cleanup) release();
      pipeline.release();
      const durationMs = Math.round((performance.now() - started) * 1000) / 1000;
      x.log['durationMs'] = durationMs;
      if (x.timings) x.log['stages'] = x.timings;
      lines.info(x.log, 'request');
      if (requestFinished.hasSubscribers) publishFinished(x, durationMs);
    }
    // Whether shutdown had begun is read when the request is settled, not when a deferred
    // answer leaves: a refusal closing the connection then would drop the answers of requests
    // pipelined behind it, which may already be stored.
    function settle(result: Outcome, draining = settings.draining()): void {
      try {
        if (result instanceof HookError) fail(req, res, x, result, draining);
        else answer(res, x, result, draining);
      } catch (err) {
        fail(req, res, x, err, draining);
      } finally {
        finish();
      }
    }
    function failed(err: unknown): void {
      try {
        fail(req, res, x, err, settings.draining());
      } finally {
        finish();
      }
    }
    let outcome: Outcome | Promise<Outcome>;
    try {
      outcome = runStages(pipeline.stages, x, logger.isLevelEnabled('debug'));
    } catch (err) {
      failed(err);
      return;
    }
    if (outcome instanceof Promise) outcome.then(settle, failed);
    else {
      // Settled without waiting (a refusal before the body): no promise made, and answered with
      // the turn's other answers rather than alone (turnBatch).
      const settled = outcome;
      const draining = settings.draining();
      inCheckPhase(() => settle(settled, draining));
    }
  };
}

// Answers held for one check phase at most; past this the rest of the turn's are sent at once.
// Held answers are not yet written, so node:http does not pause a socket that pipelines
// refusals: without a bound, one connection's burst of them was answered as one batch of
// tens of thousands (a stall of most of a second); written, they pause it as before.
const MAX_HELD_ANSWERS = 128;

/**
 * Run tasks in the event loop's check phase, all those of one turn together (at most
 * MAX_HELD_ANSWERS; any more run at once). Refusals written back to back after the turn's
 * reads (as the store's group commit answers accepted requests) cost about a fifth less CPU
 * each under a flood than one write from each request's own callback (README, Performance).
 * A task that throws is reported and does not keep the others from running.
 */
function turnBatch(onError: (err: unknown) => void): (task: () => void) => void {
  let tasks: Array<() => void> = [];
  const run = (task: () => void) => {
    try {
      task();
    } catch (err) {
      try {
        onError(err);
      } catch {
        // Even the report failed: the other answers still go out.
      }
    }
  };
  const runAll = () => {
    const due = tasks;
    tasks = [];
    for (const task of due) run(task);
  };
  return (task) => {
    if (tasks.length >= MAX_HELD_ANSWERS) {
      run(task);
      return;
    }
    if (tasks.length === 0) setImmediate(runAll);
    tasks.push(task);
  };
}

function mustClose(req: IncomingMessage, error: HookError): boolean {
  if (
    error.code === 'payload_too_large' ||
    error.code === 'request_timeout' ||
    error.code === 'body_too_fragmented'
  )
    return true;
  if (req.complete) return false;
  // Refused before its 100 Continue: the body was never asked for, so do not wait to drain it.
  if (waitsForContinue(req)) return true;
  const length = req.headers['content-length'];
  return length === undefined
    ? req.headers['transfer-encoding'] !== undefined
    : Number(length) > DRAIN_LIMIT;
}

// The cause's message and class only: stacks and payloads stay out of the log.
function describeCause(error: HookError): { type: string; message: string } | undefined {
  const cause = error.cause;
  if (cause instanceof Error) return { type: cause.name, message: cause.message };
  return undefined;
}

function publishFinished(x: Exchange, durationMs: number): void {
  const code = x.log['code'];
  const replayed = x.log['replayed'] === true;
  requestFinished.publish({
    exchange: x,
    status: x.log['status'] as number,
    ...(typeof code === 'string' && { code }),
    // Set once the token or the signature is verified (authenticate; admit for a token in the
    // URL beside the right header token). A signed delivery answered as a replay proves a
    // captured request, not the secret: anyone who saw one can send it again.
    authenticated: x.verification !== undefined && !(replayed && x.verification.scheme !== 'token'),
    durationMs,
    replayed,
  });
}

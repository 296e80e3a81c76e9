/**
 * The request pipeline as an ordered list of stages:
 * guard (headers) -> body -> envelope -> route -> policy/action -> dispatcher.
 * Each stage throws a HookError to refuse; this module turns the outcome
 * into one JSON response and one log line.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type BodyLimits, parseJsonObject, readBody } from './body.ts';
import type { Dispatcher } from './dispatcher.ts';
import { type Envelope, parseQuery } from './envelope.ts';
import { asHookError, type HookError } from './errors.ts';
import type { Admitted } from './guard.ts';
import { chooseIdempotencyKey, headerIdempotencyKey, requestFingerprint } from './idempotency.ts';
import type { Logger } from './log.ts';
import { sendEmpty, sendError, sendJson } from './respond.ts';
import type { Router } from './route.ts';

export type PipelineDeps = {
  guard: (req: IncomingMessage) => Admitted;
  route: Router;
  dispatcher: Dispatcher;
  logger: Logger;
  body: BodyLimits & { maxDepth: number };
  /** True once shutdown began: answers then close their connection (no new keep-alive requests). */
  draining: () => boolean;
};

// Bodies up to this size are drained by Node after a refusal; larger or chunked ones close the connection.
const DRAIN_LIMIT = 65_536;
const REPLAYED = Object.freeze({ 'idempotent-replayed': 'true' });

/** Build the node:http request listener. */
export function createRequestHandler(
  deps: PipelineDeps,
): (req: IncomingMessage, res: ServerResponse) => void {
  const { guard, route: routeFor, dispatcher, logger } = deps;

  async function run(req: IncomingMessage, res: ServerResponse, requestId: string, log: LogFields) {
    const admitted = guard(req);
    log.hook = admitted.hook;
    log.client = admitted.client;
    const route = routeFor(admitted.hook);
    const headerKey = headerIdempotencyKey(req.headers);
    // `Expect: 100-continue` is answered only now, after authentication: an
    // unauthenticated sender is refused before it uploads anything.
    if (expectsContinue(req)) res.writeContinue();
    const raw = await readBody(req, deps.body);
    const payload = parseJsonObject(raw, deps.body.maxDepth);
    const envelope: Envelope = {
      id: requestId,
      receivedAt: new Date().toISOString(),
      client: admitted.client,
      method: 'POST',
      path: admitted.pathname,
      hook: admitted.hook,
      headers: req.headers,
      query: parseQuery(admitted.query),
      raw,
      payload,
    };
    // The key is checked before the route runs (a transform is not worth
    // running for a request whose key is refused).
    const key = chooseIdempotencyKey(headerKey, payload);
    const accepted = await route(envelope);
    const fingerprint = key === undefined ? undefined : requestFingerprint(admitted.hook, payload);
    const result = await dispatcher.accept(
      accepted,
      key && fingerprint ? { key, fingerprint } : undefined,
    );
    const patterns = accepted.actions.flatMap((action) => action.safety?.patterns ?? []);
    if (patterns.length > 0) log.injectionPatterns = [...new Set(patterns)];
    closeIfDraining(res);
    if (result.body === null) {
      log.status = 204;
      sendEmpty(res, 204, requestId);
      return;
    }
    log.status = 200;
    log.actionIds = accepted.actions.map((action) => action.id);
    sendJson(res, 200, result.body, requestId, result.replayed ? REPLAYED : undefined);
  }

  function fail(
    req: IncomingMessage,
    res: ServerResponse,
    requestId: string,
    log: LogFields,
    err: unknown,
  ) {
    const error = asHookError(err);
    log.status = error.status;
    log.code = error.code;
    if (error.status >= 500)
      logger.error({ requestId, code: error.code, err: describeCause(error) }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    closeIfDraining(res);
    sendError(res, error, requestId, mustClose(req, error));
  }

  function closeIfDraining(res: ServerResponse): void {
    if (deps.draining()) res.setHeader('connection', 'close');
  }

  return function handleRequest(req, res) {
    const started = performance.now();
    const requestId = randomUUID();
    const log: LogFields = { requestId, client: req.socket.remoteAddress ?? '', status: 0 };
    run(req, res, requestId, log)
      .catch((err: unknown) => fail(req, res, requestId, log, err))
      .finally(() => {
        log.durationMs = Math.round((performance.now() - started) * 1000) / 1000;
        logger.info(log, 'request');
      });
  };
}

type LogFields = {
  requestId: string;
  client: string;
  status: number;
  hook?: string;
  code?: string;
  actionIds?: string[];
  /** Names of injection patterns detected in the content (never the content). */
  injectionPatterns?: string[];
  durationMs?: number;
};

// The test node:http uses to raise `checkContinue` (a list such as `100-continue, foo` too):
// every request it holds back for the pipeline gets its 100 Continue (or its refusal) here.
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

function expectsContinue(req: IncomingMessage): boolean {
  const expect = req.headers.expect;
  return expect !== undefined && CONTINUE.test(expect);
}

function mustClose(req: IncomingMessage, error: HookError): boolean {
  if (error.code === 'payload_too_large' || error.code === 'request_timeout') return true;
  if (req.complete) return false;
  // Refused before its 100 Continue: the body was never asked for, so do not wait to drain it.
  if (expectsContinue(req)) return true;
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

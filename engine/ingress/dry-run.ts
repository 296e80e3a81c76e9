/**
 * A request through the very stages the server runs, with a ledger that
 * stores nothing: what `hookgate test` shows an operator debugging a route.
 * A token route's request carries the hook token unless it brings its own; a signed route's
 * carries what the sender sends (its signature headers, or `--sign`).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Action } from '../../schemas/action.ts';
import type { Config } from '../../schemas/config.ts';
import { createUrlTokenCheck, createTokenCheck } from '../auth.ts';
import { signatureHeaders } from '../auth/sign.ts';
import type { CompiledMapping } from '../mappings.ts';
import type { Ledger } from '../dispatcher.ts';
import type { Verification } from '../envelope.ts';
import { asHookError, HookError } from '../errors.ts';
import { createMemoryLimiter } from '../rate-limit.ts';
import { type Exchange, newExchange, runStages } from './exchange.ts';
import { headerValues, type RequestSource } from './request-source.ts';
import type { RouteTable } from './routes.ts';
import { createStages } from './stages.ts';

export type DryRunRequest = {
  hook: string;
  method?: string;
  body: Buffer;
  /** Lower-case names. */
  headers: Record<string, string>;
  query: string;
};

export type DryRunResult = {
  status: number;
  /** For mapped hooks: each mapping in order and whether it matched. */
  trace: ReadonlyArray<{ mappingId: string; outcome: string }>;
  mappingId?: string;
  actions: Action[];
  response: Record<string, unknown> | string | null;
  verification?: Verification;
  /** The key that would make a repeat of this request a replay (not looked up). */
  replayKey?: string;
  error?: { code: string; message: string };
  /** The route checks a sender's signature (else the hook token). */
  signed: boolean;
};

// Stores nothing and knows no earlier request: the dry run never reads or writes the store.
const PREVIEW: Ledger = {
  hold: () => Promise.resolve({ previous: undefined, release: () => undefined }),
  commit: (accepted) => Promise.resolve({ body: JSON.stringify(accepted.response) }),
};

const CARRIERS = ['authorization', 'x-hookgate-token'];

/** Run one request through the stages; nothing is stored. */
export async function dryRun(
  config: Config,
  routes: RouteTable,
  request: DryRunRequest,
): Promise<DryRunResult> {
  const source = fileSource(config, routes, request);
  const stages = createStages({
    // As if enabled: a route is worth testing before the endpoint group is switched on.
    enabled: true,
    hooksPath: config.hooks.path,
    routes,
    limiter: createMemoryLimiter(config.hooks.authRateLimit),
    resolveClient: () => '127.0.0.1',
    tokenMatches: createTokenCheck(config.hooks.token ?? ''),
    urlToken: createUrlTokenCheck(config.hooks.token ?? ''),
    body: {
      maxBytes: config.hooks.maxBodyBytes,
      maxDepth: config.hooks.maxJsonDepth,
      timeoutMs: config.server.requestTimeoutMs,
    },
    ledger: PREVIEW,
  });
  const x = newExchange(source, headerValues(source.rawHeaders));
  x.preview = true;
  try {
    const answer = await runStages(stages, x);
    if (answer instanceof HookError) return refused(x, answer, isSigned(routes, request.hook));
    const response =
      answer.kind === 'empty'
        ? null
        : answer.kind === 'text'
          ? answer.body
          : JSON.parse(answer.body);
    return {
      status: answer.status,
      ...seen(x),
      actions: x.accepted?.actions ?? [],
      response,
      signed: isSigned(routes, request.hook),
    };
  } catch (err) {
    return refused(x, asHookError(err), isSigned(routes, request.hook));
  }
}

function isSigned(routes: RouteTable, hook: string): boolean {
  return routes.find(hook).gate.verifier !== undefined;
}

function refused(x: Exchange, error: HookError, signed: boolean): DryRunResult {
  return {
    status: error.status,
    signed,
    ...seen(x),
    actions: [],
    response: null,
    error: { code: error.code, message: error.message },
  };
}

/** The request as the stages read it, from the command line's file and flags. */
function fileSource(config: Config, routes: RouteTable, request: DryRunRequest): RequestSource {
  const token = config.hooks.token;
  const headers: IncomingHttpHeaders = { ...request.headers };
  // A token route's caller holds the token; a signed route's sender (GitHub...) does not send it.
  const tokenRoute = !isSigned(routes, request.hook);
  if (token && tokenRoute && !CARRIERS.some((name) => headers[name] !== undefined)) {
    headers.authorization = `Bearer ${token}`;
  }
  return {
    method: request.method ?? 'POST',
    url: `${config.hooks.path}/${request.hook}${request.query ? `?${request.query}` : ''}`,
    headers,
    rawHeaders: Object.entries(headers).flatMap(([name, value]) => [name, String(value)]),
    remoteAddress: '127.0.0.1',
    readBody: () => Promise.resolve(request.body),
  };
}

/** What the stages found, whether or not the request got through. */
function seen(x: Exchange) {
  const selection = x.selection;
  const verification = x.envelope?.verification ?? x.verification;
  return {
    trace: selection?.trace ?? [],
    ...(selection?.mapping && { mappingId: selection.mapping.id }),
    ...(verification && { verification }),
    ...(x.claims?.[0] && { replayKey: x.claims[0].key }),
  };
}

/**
 * The headers a route's sender adds to sign `body` (`hookgate test --sign`, the console's
 * replay): none for a token route, a sentence when a signed one cannot be signed.
 */
export function senderHeaders(
  config: Config,
  mappings: readonly CompiledMapping[],
  hook: string,
  body: Buffer,
  given: Record<string, string>,
): Record<string, string> | string {
  const auth = mappings.find((m) => m.path === hook && m.auth)?.auth;
  // A token route's sender signs nothing (the dry run adds the hook token itself).
  if (!auth) return {};
  const signed = signatureHeaders(auth, body, Math.floor(Date.now() / 1000), given);
  if (typeof signed === 'string') return signed;
  // A sender that can add a header adds the token too, when the route requires both.
  const token = config.hooks.token;
  if (auth.requireToken && token && given['authorization'] === undefined) {
    signed['authorization'] = `Bearer ${token}`;
  }
  return signed;
}

/**
 * Routes compiled at boot: one per hook name the configuration serves
 * (`wake`, `agent`, each mapping path) and one for every other name. A route
 * owns how it is authenticated (the hook token, a provider signature, or
 * both), where its delivery id comes from, which bodies it takes, and its
 * accept step. Nothing here is decided per request.
 */
import { randomUUIDv7 } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { AuthScheme, RouteAuth } from '../../schemas/auth.ts';
import type { Config } from '../../schemas/config.ts';
import { createTokenCheck } from '../auth.ts';
import { createVerifier, HMAC_ONLY_KEYS } from '../auth/registry.ts';
import { isTimed } from '../auth/schemes.ts';
import { DEFAULT_TOLERANCE_SECONDS } from '../auth/timestamp.ts';
import type { Verifier } from '../auth/verifier.ts';
import { ConfigError } from '../config.ts';
import type { Envelope } from '../envelope.ts';
import { HookError } from '../errors.ts';
import type { MappedContext } from '../mapped-route.ts';
import type { CompiledMapping } from '../mappings.ts';
import type { Policy } from '../policy.ts';
import { type RenderLimits, renderLimits } from '../render-budget.ts';
import type { TransformSupervisor } from '../sandbox/supervisor.ts';
import { MESSAGE_MEMORY_MS } from '../gmail/message-memory.ts';
import { type AcceptStep, builtInAccept, mappedAccept } from './accept-steps.ts';
import { type DeliveryIdRule, deliveryIdRule } from './delivery-ids.ts';

/** How a route is authenticated. */
export type RouteGate = {
  scheme: AuthScheme;
  /** The hook token is required (scheme `token`, or `requireToken`). */
  token: boolean;
  /** A provider signature over the raw body is required. */
  verifier: Verifier | undefined;
  /** The subscription handshake's verify token matches (GET), when the route has one. */
  verifyToken: ((presented: string) => boolean) | undefined;
  /** Header names (lower case) kept from templates, conditions and transforms: the signature. */
  hidden: readonly string[];
};

export type CompiledRoute = {
  /** The hook name; '' for the route of names nothing else serves. */
  name: string;
  gate: RouteGate;
  /** Form bodies are taken (mapped routes); the built-in triggers take JSON only. */
  forms: boolean;
  deliveryId: DeliveryIdRule | undefined;
  /** How long this route's delivery ids and idempotency keys are remembered. */
  keyWindowMs: number;
  /** The mappings tried, in order (empty for the built-in triggers). */
  mappings: readonly CompiledMapping[];
  /**
   * What the route runs reads the request's query (a mapping's conditions, templates and
   * transform see it): a name given twice is refused, and a key reused with another query is
   * another request. The built-in triggers read none.
   */
  readsQuery: boolean;
  accept: AcceptStep;
  /** No mapping can ever match the name: refused 404 once the caller is authenticated. */
  unknown?: true;
};

export type RouteTable = {
  /** The route for a hook name (the catch-all route for names nothing else serves). */
  find(hook: string): CompiledRoute;
  /** The longest key window of any route (what pruning keeps). */
  maxKeyWindowMs: number;
};

/** The context routes build actions in: the policy, the configured bounds, the transforms. */
export function routeContext(
  config: Config,
  policy: Policy,
  extras: { transforms?: TransformSupervisor; lastChannel?: () => string | undefined } = {},
): MappedContext {
  return {
    policy,
    maxTimeoutSeconds: config.hooks.maxTimeoutSeconds,
    maxActions: config.hooks.maxActionsPerRequest,
    renderLimits: renderLimits(config.hooks),
    // Time-ordered: the store's id index grows at its end instead of anywhere.
    newId: randomUUIDv7,
    // Time-ordered too (the indexes by session key, and session heads, grow at their end under
    // a backlog); its 74 random bits keep it unguessable even to someone who knows when it was made.
    newSessionId: randomUUIDv7,
    ...(extras.lastChannel && { lastChannel: extras.lastChannel }),
    ...(extras.transforms && { transforms: extras.transforms }),
  };
}

// The hook token's gate: /wake, /agent, and every path without a signature scheme.
const TOKEN_GATE: RouteGate = Object.freeze({
  scheme: 'token',
  token: true,
  verifier: undefined,
  verifyToken: undefined,
  hidden: Object.freeze([]),
});

type Windows = { tokenMs: number; signedMs: number };

/** Compile the routes of a configuration. Every problem is a ConfigError naming the mapping. */
export function compileRoutes(
  config: Config,
  mappings: readonly CompiledMapping[],
  ctx: MappedContext,
): RouteTable {
  const hooks = config.hooks;
  const windows = {
    tokenMs: hooks.idempotencyWindowSeconds * 1000,
    signedMs: hooks.deliveryRetentionSeconds * 1000,
  };
  const routes = new Map<string, CompiledRoute>();
  for (const name of ['wake', 'agent'] as const) {
    routes.set(name, tokenRoute(name, [], builtInAccept(name, ctx), windows, false));
  }
  const catchAll = mappings.filter((m) => m.path === undefined);
  checkCatchAll(catchAll);
  for (const name of new Set(mappings.map((m) => m.path))) {
    if (name === undefined) continue;
    routes.set(name, mappedRoute(name, mappings, ctx, windows, hooks.deliveryRetentionSeconds));
  }
  const accept = catchAll.length > 0 ? mappedAccept(catchAll, ctx) : unknownHook;
  const fallback: CompiledRoute = {
    ...tokenRoute('', catchAll, accept, windows, true),
    ...(catchAll.length === 0 && { unknown: true }),
  };
  return {
    find: (hook) => routes.get(hook) ?? fallback,
    // The mail flow's message ids are kept at least a week (engine/gmail/message-memory.ts).
    maxKeyWindowMs: Math.max(
      windows.tokenMs,
      windows.signedMs,
      hooks.gmail?.account !== undefined ? MESSAGE_MEMORY_MS : 0,
    ),
  };
}

function tokenRoute(
  name: string,
  mappings: readonly CompiledMapping[],
  accept: AcceptStep,
  windows: Windows,
  forms: boolean,
): CompiledRoute {
  const base = { name, gate: TOKEN_GATE, forms, deliveryId: undefined };
  return {
    ...base,
    keyWindowMs: windows.tokenMs,
    mappings,
    readsQuery: mappings.length > 0,
    accept,
  };
}

/** A signature belongs to one sender's path: a catch-all mapping cannot declare one. */
function checkCatchAll(catchAll: readonly CompiledMapping[]): void {
  for (const mapping of catchAll) {
    if (mapping.auth && mapping.auth.scheme !== 'token') {
      throw new ConfigError(
        `${mapping.at}.auth`,
        `(mapping "${mapping.id}") a signed mapping needs match.path: a signature belongs to one sender's path`,
      );
    }
  }
}

/** The route of one mapping path: its auth, its delivery id, the mappings it tries. */
function mappedRoute(
  name: string,
  mappings: readonly CompiledMapping[],
  ctx: MappedContext,
  windows: Windows,
  retentionSeconds: number,
): CompiledRoute {
  const own = mappings.filter((m) => m.path === name);
  const auth = routeAuth(own);
  const signed = auth !== undefined && auth.auth.scheme !== 'token';
  if (auth && signed) checkRetention(retentionSeconds, auth.auth, auth.at);
  // A signed path runs only its own mappings: a catch-all mapping expects the hook token.
  const tried = signed ? own : mappings.filter((m) => m.path === name || m.path === undefined);
  return {
    name,
    gate: auth ? compileGate(auth.auth, auth.at) : TOKEN_GATE,
    forms: true,
    deliveryId: compileDeliveryId(auth?.auth.scheme ?? 'token', own, ctx.renderLimits),
    keyWindowMs: signed ? windows.signedMs : windows.tokenMs,
    mappings: tried,
    readsQuery: tried.length > 0,
    accept: mappedAccept(tried, ctx),
  };
}

function unknownHook(envelope: Envelope): never {
  throw unknownHookError(envelope.hook);
}

/** 404 for a hook name no mapping can ever match. */
export function unknownHookError(hook: string): HookError {
  return new HookError('unknown_hook', `No hook named "${hook.slice(0, 100)}".`);
}

/** The one auth block of a path: declared on any of its mappings, identical wherever repeated. */
function routeAuth(own: readonly CompiledMapping[]): { auth: RouteAuth; at: string } | undefined {
  let found: { auth: RouteAuth; at: string; id: string } | undefined;
  for (const mapping of own) {
    if (!mapping.auth) continue;
    if (!found) {
      found = { auth: mapping.auth, at: mapping.authAt, id: mapping.id };
    } else if (!isDeepStrictEqual(found.auth, mapping.auth)) {
      throw new ConfigError(
        mapping.authAt,
        `(mapping "${mapping.id}") differs from the auth of mapping "${found.id}" on the same path; a path has one auth`,
      );
    }
  }
  return found;
}

// Keys that mean nothing on a token route: a secret there would be silently ignored.
const SIGNATURE_KEYS = ['secret', 'secrets', 'toleranceSeconds', ...HMAC_ONLY_KEYS] as const;

function compileGate(auth: RouteAuth, at: string): RouteGate {
  const signed = auth.scheme !== 'token';
  const stray = signed ? undefined : SIGNATURE_KEYS.find((key) => auth[key] !== undefined);
  if (stray) {
    throw new ConfigError(
      `${at}.${stray}`,
      'scheme token is the hook token: it takes no secret or signature settings',
    );
  }
  return {
    scheme: auth.scheme,
    token: !signed || auth.requireToken === true,
    verifier: signed ? createVerifier(auth, at) : undefined,
    verifyToken: auth.verifyToken === undefined ? undefined : verifyTokenCheck(auth.verifyToken),
    // The well-known signature headers are hidden by name already; a custom one may look harmless.
    hidden: auth.scheme === 'hmac' && auth.header ? [auth.header.toLowerCase()] : [],
  };
}

function verifyTokenCheck(expected: string): (presented: string) => boolean {
  const matches = createTokenCheck(expected);
  return (presented) => matches({ kind: 'token', token: presented });
}

// Past the retention a replay inside the signature's time window would run again. The window
// is tolerance either side of the signed time: a delivery first seen with a timestamp up to
// `tolerance` ahead still verifies `tolerance` after it, so its id must outlive twice that.
function checkRetention(retentionSeconds: number, auth: RouteAuth, at: string): void {
  if (!isTimed(auth)) return;
  const tolerance = auth.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (retentionSeconds < 2 * tolerance) {
    throw new ConfigError(
      'hooks.deliveryRetentionSeconds',
      `${retentionSeconds} is shorter than twice ${at}.toleranceSeconds (${tolerance}, either side of the signed time): a delivery replayed inside its time window would run again`,
    );
  }
}

function compileDeliveryId(
  scheme: AuthScheme,
  own: readonly CompiledMapping[],
  limits: RenderLimits | undefined,
): DeliveryIdRule | undefined {
  const withKey = own.find((m) => m.idempotencyKey !== undefined);
  for (const mapping of own) {
    if (mapping.idempotencyKey !== undefined && mapping.idempotencyKey !== withKey?.idempotencyKey)
      throw new ConfigError(
        `${mapping.at}.idempotencyKey`,
        `(mapping "${mapping.id}") differs from mapping "${withKey?.id}" on the same path; a path has one delivery id`,
      );
  }
  try {
    return deliveryIdRule(scheme, withKey?.idempotencyKey, withKey?.id, limits);
  } catch (err) {
    throw new ConfigError(
      `${withKey?.at}.idempotencyKey`,
      `(mapping "${withKey?.id}") ${String((err as Error).message).split('\n')[0]}`,
    );
  }
}

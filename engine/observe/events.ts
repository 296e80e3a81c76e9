/**
 * What hookgate publishes about itself on node:diagnostics_channel. The
 * request path and the runtime only publish (and only when someone listens);
 * metrics, the console and the debug log subscribe. Nothing here is payload
 * text or a secret unless a subscriber takes it from the exchange itself.
 */
import { channel } from 'node:diagnostics_channel';
import type { Exchange, StageName } from '../ingress/exchange.ts';

/** A request was answered: the exchange as the stages left it. */
export type RequestFinished = {
  exchange: Exchange;
  status: number;
  /** The error code of a refusal. */
  code?: string;
  /**
   * The caller was authenticated (the authenticate stage verified its hook token or signature)
   * before the answer: a 400 after that is the caller's own, while a 401, an unknown path, a
   * body too large before its signature was checked or a handshake came from anyone.
   */
  authenticated: boolean;
  durationMs: number;
  /** Answered from an earlier acceptance (idempotent replay). */
  replayed: boolean;
};

export const requestFinished = channel('hookgate:request');

/** A message Node's parser refused was answered (400, 408, 431): no exchange, no route. */
export type MessageRefused = { status: number; code: string };

export const messageRefused = channel('hookgate:message-refused');

/** One stage ran (published by the stage runner, only when someone listens). */
export type StageTimed = {
  stage: StageName;
  /** The picked route's hook name ('' for names nothing serves); undefined before pickRoute. */
  route: string | undefined;
  ms: number;
};

export const stageTimed = channel('hookgate:stage');

/** How an agent run ended this time: final (done, failed, timeout, dead) or not (retry, interrupted). */
export type RunOutcome = 'done' | 'failed' | 'timeout' | 'retry' | 'dead' | 'interrupted';

/** An agent turn ran (the runner returned). */
export type RunFinished = { agentId: string; outcome: RunOutcome; durationMs: number };

export const runFinished = channel('hookgate:run');

/** A reply's delivery reached its final outcome (what the audit trail records). */
export type DeliveryFinished = {
  source: 'agent' | 'heartbeat';
  /** A configured channel id, or 'last' when no route could be resolved. */
  channel: string;
  outcome: 'sent' | 'failed' | 'skipped' | 'dead';
};

export const deliveryFinished = channel('hookgate:delivery');

/** A transform call settled. */
export type TransformCalled = {
  /** The mapping's id (from config); undefined for a module key nothing maps. */
  mappingId: string | undefined;
  outcome: 'ok' | 'failed' | 'timeout' | 'invalid_output' | 'busy';
  durationMs: number;
};

export const transformCalled = channel('hookgate:transform');

/** A transform process ended and will be replaced. */
export type TransformRestarted = {
  reason: 'crash' | 'timeout' | 'invalid_message' | 'load_timeout';
};

export const transformRestarted = channel('hookgate:transform-restart');

/** A request failed authentication (counted toward the address's lock). */
export type AuthFailed = {
  /** The route's hook name ('' for names nothing serves). */
  route: string;
  /** What failed, by name: 'token', 'verify_token' or a signature scheme's AuthFailure. */
  failure: string;
};

export const authFailed = channel('hookgate:auth-failure');

/** An address reached the failed-auth limit and is locked out. */
export type AuthLocked = { lockoutSeconds: number };

export const authLocked = channel('hookgate:lockout');

/** Accepted actions were stored durably (the ledger's commit). */
export type ActionsCommitted = { count: number };

export const actionsCommitted = channel('hookgate:commit');

/** The admin listener refused a request before it ran: a wrong token, another host or site. */
export type AdminRefused = { code: 'unauthorized' | 'forbidden_host' | 'forbidden_origin' };

export const adminRefused = channel('hookgate:admin-refused');

/**
 * A request through the whole pipeline without storing or dispatching: what
 * `hookgate test` shows an operator debugging a mapping. Same route, rules,
 * templates, policy and safety wrapper as a real request.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Action } from '../schemas/action.ts';
import type { Config } from '../schemas/config.ts';
import type { Accepted } from './actions.ts';
import { parseJsonObject } from './body.ts';
import type { Envelope } from './envelope.ts';
import { asHookError } from './errors.ts';
import { buildMappedActions, selectFor } from './mapped-route.ts';
import type { CompiledMapping } from './mappings.ts';
import type { Policy } from './policy.ts';
import type { TransformSupervisor } from './sandbox/supervisor.ts';
import { createRouter } from './route.ts';
import type { MatchTrace } from './rules.ts';
import { renderLimits } from './render-budget.ts';

export type DryRunRequest = {
  hook: string;
  body: Buffer;
  headers: IncomingHttpHeaders;
  query: Record<string, string>;
};

export type DryRunResult = {
  status: number;
  /** For mapped hooks: each mapping in order and whether it matched. */
  trace: MatchTrace[];
  mappingId?: string;
  actions: Action[];
  response: Record<string, unknown> | null;
  error?: { code: string; message: string };
};

/** Run one request through route, rules, templates and policy; nothing is stored. */
export async function dryRun(
  config: Config,
  policy: Policy,
  mappings: readonly CompiledMapping[],
  request: DryRunRequest,
  transforms?: TransformSupervisor,
): Promise<DryRunResult> {
  const ctx = {
    ...(transforms && { transforms }),
    policy,
    maxTimeoutSeconds: config.hooks.maxTimeoutSeconds,
    maxActions: config.hooks.maxActionsPerRequest,
    renderLimits: renderLimits(config.hooks),
    newId: randomUUID,
  };
  let trace: MatchTrace[] = [];
  let mappingId: string | undefined;
  try {
    const route = createRouter(ctx, mappings)(request.hook);
    const envelope: Envelope = {
      id: randomUUID(),
      receivedAt: new Date().toISOString(),
      client: '127.0.0.1',
      method: 'POST',
      path: `${config.hooks.path}/${request.hook}`,
      hook: request.hook,
      headers: request.headers,
      query: request.query,
      raw: request.body,
      payload: parseJsonObject(request.body, config.hooks.maxJsonDepth),
    };
    let accepted: Accepted;
    if (request.hook === 'wake' || request.hook === 'agent') {
      accepted = await route(envelope);
    } else {
      const { selection, data } = selectFor(mappings, envelope);
      trace = selection.trace;
      mappingId = selection.mapping?.id;
      accepted = selection.mapping
        ? await buildMappedActions(selection.mapping, envelope, data, ctx)
        : { actions: [], response: null };
    }
    const status = accepted.response === null ? 204 : 200;
    return {
      status,
      trace,
      ...(mappingId && { mappingId }),
      actions: accepted.actions,
      response: accepted.response,
    };
  } catch (err) {
    const error = asHookError(err);
    return {
      status: error.status,
      trace,
      ...(mappingId && { mappingId }),
      actions: [],
      response: null,
      error: { code: error.code, message: error.message },
    };
  }
}

/**
 * The actions the store probes queue, built by the server's own builders
 * (engine/actions.ts) from the bench targets' bodies, with the context the
 * routes give them (routeContext: default configuration, time-ordered ids):
 * what a probe stores is what `hookgate serve` would store for that request.
 */
import { randomUUIDv7 } from 'node:crypto';
import { buildAgentAction, buildWakeAction } from '../engine/actions.ts';
import { resolveConfig } from '../engine/config.ts';
import type { Envelope } from '../engine/envelope.ts';
import { routeContext } from '../engine/ingress/routes.ts';
import { policyFromConfig } from '../engine/policy.ts';
import type { AgentAction, WakeAction } from '../schemas/action.ts';
import type { AgentPayload, WakePayload } from '../schemas/payloads.ts';
import { AGENT_BODY, WAKE_BODY } from './targets.ts';

const { config } = resolveConfig(
  { hooks: { enabled: true, token: 'a-probe-token-of-24-chars' } },
  { baseDir: process.cwd(), env: {} },
);
const context = routeContext(config, policyFromConfig(config));
const WAKE_FIELDS = JSON.parse(WAKE_BODY) as WakePayload;
const AGENT_FIELDS = JSON.parse(AGENT_BODY) as AgentPayload;

/** A request's envelope as the stages leave it for the builders (token-authenticated). */
function envelope(hook: string, body: string): Envelope {
  return {
    id: randomUUIDv7(),
    receivedAt: new Date().toISOString(),
    client: '127.0.0.1',
    method: 'POST',
    path: `/hooks/${hook}`,
    hook,
    headers: {},
    query: {},
    raw: Buffer.from(body),
    payload: JSON.parse(body) as Record<string, unknown>,
    verification: { scheme: 'token' },
  };
}

/** The bench's /wake request, as an action. */
export function probeWake(): WakeAction {
  return buildWakeAction(envelope('wake', WAKE_BODY), WAKE_FIELDS, context);
}

/** The bench's /agent request (a session of its own), as an action. */
export function probeAgent(): AgentAction {
  return buildAgentAction(envelope('agent', AGENT_BODY), AGENT_FIELDS, context);
}

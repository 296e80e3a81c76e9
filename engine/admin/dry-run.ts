/**
 * The console's dry runs (playground and replay) through the config the
 * server runs now, and re-signing a kept body for a signed route as its
 * sender would (what `hookgate test --sign` does). The wiring passes a
 * function that returns the current compiled set, so a reload is picked up.
 */
import { signatureHeaders } from '../auth/sign.ts';
import { type DryRunRequest, type DryRunResult, dryRun } from '../ingress/dry-run.ts';
import type { RouteTable } from '../ingress/routes.ts';
import type { CompiledMapping } from '../mappings.ts';
import type { Config } from '../../schemas/config.ts';
import type { SignFor } from './deps.ts';

/** The config and what was compiled from it, as the server runs them now. */
export type CurrentSetup = () => {
  config: Config;
  routes: RouteTable;
  mappings: readonly CompiledMapping[];
};

/** A dry run through the current config and routes. */
export function currentDryRun(
  current: CurrentSetup,
): (request: DryRunRequest) => Promise<DryRunResult> {
  return function dryRunNow(request) {
    const { config, routes } = current();
    return dryRun(config, routes, request);
  };
}

/** Re-signing for the current config's routes: no headers for a token route, a sentence when a signed one cannot be signed. */
export function currentSigner(current: CurrentSetup): SignFor {
  return function signFor(hook, body, headers) {
    const { config, mappings } = current();
    const auth = mappings.find((m) => m.path === hook && m.auth)?.auth;
    // A token route's sender signs nothing (the dry run adds the hook token itself).
    if (!auth) return {};
    const signed = signatureHeaders(auth, body, Math.floor(Date.now() / 1000), headers);
    if (typeof signed === 'string') return signed;
    // A sender that can add a header adds the token too, when the route requires both.
    const token = config.hooks.token;
    if (auth.requireToken && token && headers['authorization'] === undefined) {
      signed['authorization'] = `Bearer ${token}`;
    }
    return signed;
  };
}

/**
 * The console's dry runs (playground and replay) through the configuration
 * the server runs now, held for the time of the run as a request holds it,
 * and re-signing a kept body for a signed route as its sender would.
 */
import type { CompiledConfig } from '../config/compile.ts';
import {
  type DryRunRequest,
  type DryRunResult,
  dryRun,
  senderHeaders,
} from '../ingress/dry-run.ts';
import type { RouteTable } from '../ingress/routes.ts';
import type { SignFor } from './deps.ts';

/** The current configuration, held until released (a running instance's generation). */
export type HeldSetup = { compiled: CompiledConfig; routes: RouteTable; release(): void };

/** A dry run through the configuration current when it starts. */
export function heldDryRun(
  hold: () => HeldSetup,
): (request: DryRunRequest) => Promise<DryRunResult> {
  return async function dryRunNow(request) {
    const setup = hold();
    try {
      return await dryRun(setup.compiled.loaded.config, setup.routes, request);
    } finally {
      setup.release();
    }
  };
}

/** Re-signing for the current configuration's routes. */
export function heldSigner(hold: () => HeldSetup): SignFor {
  return function signFor(hook, body, headers) {
    const setup = hold();
    try {
      return senderHeaders(
        setup.compiled.loaded.config,
        setup.compiled.mappings,
        hook,
        body,
        headers,
      );
    } finally {
      setup.release();
    }
  };
}

/**
 * One generation of the configuration in a running instance: its compiled
 * config, its transform processes, its routes and its stage list. Requests
 * hold the generation they started on; a retired generation closes its
 * transform processes once the last of them is answered.
 */
import type { ClientAddressResolver } from '../client-address.ts';
import { createUrlTokenCheck, createTokenCheck } from '../auth.ts';
import type { CompiledConfig } from '../config/compile.ts';
import type { Ledger } from '../dispatcher.ts';
import type { NamedStage } from '../ingress/exchange.ts';
import type { Pipeline } from '../ingress/http-handler.ts';
import type { RouteTable } from '../ingress/routes.ts';
import { createStages } from '../ingress/stages.ts';
import type { Logger } from '../log.ts';
import type { AuthFailureLimiter } from '../rate-limit.ts';
import { startTransforms } from '../sandbox/start.ts';
import type { TransformSupervisor } from '../sandbox/supervisor.ts';

/** What every generation of an instance shares. */
export type GenerationDeps = {
  logger: Logger;
  ledger: Ledger;
  /** Kept across reloads: a reload never lifts a lockout. */
  limiter: AuthFailureLimiter;
  resolveClient: ClientAddressResolver;
  lastChannel: () => string | undefined;
  /** server.requestTimeoutMs as the listener started with it (restart-only). */
  requestTimeoutMs: number;
};

export type Generation = Pipeline & {
  readonly compiled: CompiledConfig;
  readonly routes: RouteTable;
  readonly transforms: TransformSupervisor | undefined;
  /** Count a request in (it calls release when answered). */
  acquire(): Generation;
  /** Stop serving new requests: resolves once the last request is answered and transforms are closed. */
  retire(): Promise<void>;
};

/** Start a generation: its transform processes load (a module that does not load is a ConfigError). */
export async function startGeneration(
  compiled: CompiledConfig,
  deps: GenerationDeps,
): Promise<Generation> {
  const { config } = compiled.loaded;
  const transforms = await startTransforms(config, compiled.mappings, deps.logger);
  const routes = compiled.routes({
    ...(transforms && { transforms }),
    lastChannel: deps.lastChannel,
  });
  const stages: readonly NamedStage[] = createStages({
    enabled: config.hooks.enabled,
    hooksPath: config.hooks.path,
    routes,
    limiter: deps.limiter,
    resolveClient: deps.resolveClient,
    tokenMatches: createTokenCheck(config.hooks.token ?? ''),
    urlToken: createUrlTokenCheck(config.hooks.token ?? ''),
    body: {
      maxBytes: config.hooks.maxBodyBytes,
      maxDepth: config.hooks.maxJsonDepth,
      timeoutMs: deps.requestTimeoutMs,
    },
    ledger: deps.ledger,
  });
  let inFlight = 0;
  let drained: (() => void) | undefined;
  let retiring: Promise<void> | undefined;
  const generation: Generation = {
    compiled,
    routes,
    transforms,
    stages,
    acquire() {
      inFlight++;
      return generation;
    },
    release() {
      inFlight--;
      if (inFlight === 0) drained?.();
    },
    retire() {
      retiring ??= new Promise<void>((resolve) => {
        drained = resolve;
        if (inFlight === 0) resolve();
      }).then(() => transforms?.close());
      return retiring;
    },
  };
  return generation;
}

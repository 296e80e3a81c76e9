/**
 * The admin listener's dependencies, taken from a running instance: its
 * readiness, its metrics, the request journal, the runtime's runs, and dry
 * runs through whatever configuration is current.
 */
import { credentialValues } from '../config/hook-credentials.ts';
import type { Config } from '../../schemas/config.ts';
import type { MailFlow } from '../gmail/flow.ts';
import type { Logger } from '../log.ts';
import { createMetrics } from '../observe/metrics.ts';
import type { ActionStore } from '../queue/action-store.ts';
import type { LiveConfig } from '../reload/live-config.ts';
import type { Runtime } from '../runtime/runtime.ts';
import type { AdminDeps } from './deps.ts';
import { heldDryRun, heldSigner } from './dry-run.ts';
import { RequestJournal } from './journal.ts';
import { checkReadiness } from './readiness.ts';
import { runsView } from './runs-view.ts';

export type AdminParts = {
  live: LiveConfig;
  store: ActionStore;
  runtime: Runtime | undefined;
  mail: MailFlow | undefined;
  logger: Logger;
};

/** Build the deps; `close` stops the journal and the metrics' subscriptions. */
export function adminDeps(config: Config, parts: AdminParts): { deps: AdminDeps; close(): void } {
  const settings = config.admin as NonNullable<Config['admin']>;
  // Listening before the hooks listener takes its first request.
  const journal = startJournal(settings, () => parts.live.current().compiled.loaded.config);
  const runtime = parts.runtime;
  const metrics = createMetrics(
    runtime
      ? { queueDepth: () => runtime.store.countByState(), leading: () => runtime.leading() }
      : {},
  );
  const hold = () => parts.live.current().acquire();
  const deps: AdminDeps = {
    readiness: () =>
      checkReadiness({
        store: parts.store,
        transforms: () => parts.live.current().transforms?.processes(),
        lastReload: parts.live.lastReload,
        mail: parts.mail && (() => (parts.mail as MailFlow).state()),
      }),
    metrics,
    journal,
    runs: runtime ? runsView(runtime.store) : undefined,
    dryRun: heldDryRun(hold),
    signFor: heldSigner(hold),
  };
  return {
    deps,
    close() {
      journal.stop();
      metrics.close();
    },
  };
}

/**
 * The request journal of an admin listener, listening from now on: the body bound and the
 * credentials its kept headers are cleared of are read from `current`, the configuration in force.
 */
export function startJournal(
  settings: Pick<NonNullable<Config['admin']>, 'recentRequests' | 'keepPayloads'>,
  current: () => Config,
): RequestJournal {
  return new RequestJournal({
    recentRequests: settings.recentRequests,
    keepPayloads: settings.keepPayloads,
    maxBodyBytes: () => current().hooks.maxBodyBytes,
    credentials: () => credentialValues(current()),
  }).start();
}

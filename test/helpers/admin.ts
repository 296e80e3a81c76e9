/**
 * Test helpers for the admin listener: hookgate started in-process on port
 * 0 (as test/helpers/hookgate.ts does) with the admin listener assembled
 * next to it, the way the wiring does: its runtime store's runs, dry runs
 * through the instance's own current configuration, the journal.
 */
import { startJournal } from '../../engine/admin/wiring.ts';
import { resolveConfig } from '../../engine/config.ts';
import { startHookgate } from '../../engine/hookgate.ts';
import { createLogger } from '../../engine/log.ts';
import { heldDryRun, heldSigner } from '../../engine/admin/dry-run.ts';
import type { AdminDeps, Readiness } from '../../engine/admin/deps.ts';
import type { RequestJournal } from '../../engine/admin/journal.ts';
import { runsView } from '../../engine/admin/runs-view.ts';
import { type AdminListener, startAdmin } from '../../engine/admin/server.ts';
import { TOKEN, tempDir } from './hookgate.ts';

export const ADMIN_TOKEN = 'test-admin-token-9876543210';

export type AdminStack = {
  /** The hooks listener. */
  hooksUrl: string;
  hooksPath: string;
  admin: AdminListener;
  journal: RequestJournal;
  dataDir: string;
  /** POST JSON to `<hooks.path>/<name>` with the hook token (unless `token: null`). */
  post(
    name: string,
    body: unknown,
    init?: { headers?: Record<string, string>; token?: string | null },
  ): Promise<Response>;
  /** fetch on the admin listener with the admin token (unless `token: null`). */
  adminFetch(path: string, init?: RequestInit & { token?: string | null }): Promise<Response>;
  stop(): Promise<void>;
};

export type StackOptions = {
  runtime?: boolean;
  /** admin settings over { host: 127.0.0.1, port: 0, token: ADMIN_TOKEN }; token: null for none. */
  admin?: { token?: string | null; keepPayloads?: boolean; recentRequests?: number };
  readiness?: () => Promise<Readiness>;
  metrics?: AdminDeps['metrics'];
};

/** Start hookgate and its admin listener with `overrides` merged as test/helpers/hookgate.ts does. */
export async function startAdminStack(
  overrides: Record<string, unknown> = {},
  options: StackOptions = {},
): Promise<AdminStack> {
  const temp = tempDir('hookgate-admin-');
  const { hooks, server, ...rest } = overrides as {
    hooks?: Record<string, unknown>;
    server?: Record<string, unknown>;
  };
  const adminToken = options.admin?.token === undefined ? ADMIN_TOKEN : options.admin.token;
  const raw = {
    ...rest,
    server: { host: '127.0.0.1', port: 0, ...server },
    hooks: { enabled: true, token: TOKEN, ...hooks },
    admin: {
      port: 0,
      ...(adminToken !== null && { token: adminToken }),
      keepPayloads: options.admin?.keepPayloads ?? false,
      recentRequests: options.admin?.recentRequests ?? 1000,
    },
  };
  const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
  const { config } = loaded;
  const settings = config.admin as NonNullable<typeof config.admin>;
  const logger = createLogger('silent');
  // The journal listens before the first request is answered.
  const journal = startJournal(settings, () => config);
  // The admin listener is assembled here (with the test's readiness and metrics), not by hookgate.
  const { admin: _ownAdmin, ...withoutAdmin } = config;
  const hookgate = await startHookgate(
    { ...loaded, config: withoutAdmin },
    { logger, runtime: options.runtime ?? false },
  );
  // The instance's own configuration, held as the wiring holds it.
  const hold = () => hookgate.live.current().acquire();
  const admin = await startAdmin(
    {
      host: settings.host,
      port: settings.port,
      ...(settings.token !== undefined && { token: settings.token }),
      logger,
      maxBodyBytes: () => config.hooks.maxBodyBytes,
      caps: config.server,
    },
    {
      readiness:
        options.readiness ?? (async () => ({ ready: true, checks: { store: { ok: true } } })),
      ...(options.metrics && { metrics: options.metrics }),
      journal,
      runs: hookgate.runtime ? runsView(hookgate.runtime.store) : undefined,
      dryRun: heldDryRun(hold),
      signFor: heldSigner(hold),
    },
  );
  const hooksPath = config.hooks.path;
  return {
    hooksUrl: hookgate.url,
    hooksPath,
    admin,
    journal,
    dataDir: temp.dir,
    post(name, body, init = {}) {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        ...init.headers,
      };
      const token = init.token === undefined ? TOKEN : init.token;
      if (token !== null) headers['authorization'] = `Bearer ${token}`;
      const payload = typeof body === 'string' ? body : JSON.stringify(body);
      return fetch(`${hookgate.url}${hooksPath}/${name}`, {
        method: 'POST',
        headers,
        body: payload,
      });
    },
    adminFetch(path, init = {}) {
      const { token: given, ...rest } = init;
      const token = given === undefined ? adminToken : given;
      const headers = new Headers(rest.headers);
      if (token !== null && token !== undefined) headers.set('authorization', `Bearer ${token}`);
      return fetch(`${admin.url}${path}`, { ...rest, headers });
    },
    async stop() {
      journal.stop();
      await admin.close();
      await hookgate.close();
      temp.cleanup();
    },
  };
}

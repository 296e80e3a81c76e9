/**
 * The console under a browser: hookgate plus its admin listener assembled as
 * test/helpers/admin.ts does, but with a chosen admin port, so the stack can be
 * stopped and started again under a browser page that stays open (a restart).
 */
import { startJournal } from '../../engine/admin/wiring.ts';
import { resolveConfig } from '../../engine/config.ts';
import { startHookgate } from '../../engine/hookgate.ts';
import { createLogger } from '../../engine/log.ts';
import { heldDryRun, heldSigner } from '../../engine/admin/dry-run.ts';
import type { RequestJournal } from '../../engine/admin/journal.ts';
import { runsView } from '../../engine/admin/runs-view.ts';
import { startAdmin } from '../../engine/admin/server.ts';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './admin.ts';
import { ensureChromium } from './chromium.ts';
import { TOKEN } from './hookgate.ts';

export { ADMIN_TOKEN, TOKEN };

export type Restartable = {
  adminUrl: string;
  hooksUrl: string;
  journal: RequestJournal;
  post(name: string, body: unknown): Promise<Response>;
  /** The hooks listener and journal are up; the admin listener is not yet (see startAdminNow). */
  startAdminNow(): Promise<void>;
  stop(): Promise<void>;
};

/** hookgate with its journal; its admin listener on `adminPort` (0: any) once startAdminNow runs. */
export async function startRestartable(
  dataDir: string,
  adminPort: number,
  overrides: Record<string, unknown> = {},
  options: { runtime?: boolean; keepPayloads?: boolean } = {},
): Promise<Restartable> {
  const { hooks, ...rest } = overrides as { hooks?: Record<string, unknown> };
  const raw = {
    ...rest,
    server: { host: '127.0.0.1', port: 0 },
    hooks: { enabled: true, token: TOKEN, ...hooks },
    admin: {
      port: adminPort,
      token: ADMIN_TOKEN,
      keepPayloads: options.keepPayloads ?? false,
      recentRequests: 1000,
    },
  };
  const loaded = resolveConfig(raw, { baseDir: dataDir, dataDir, env: {} });
  const { config } = loaded;
  const settings = config.admin as NonNullable<typeof config.admin>;
  const logger = createLogger('silent');
  const journal = startJournal(settings, () => config);
  const { admin: _a, ...withoutAdmin } = config;
  const hookgate = await startHookgate(
    { ...loaded, config: withoutAdmin },
    { logger, runtime: options.runtime ?? false },
  );
  const hold = () => hookgate.live.current().acquire();
  let admin: Awaited<ReturnType<typeof startAdmin>> | undefined;
  const stack: Restartable = {
    adminUrl: '',
    hooksUrl: hookgate.url,
    journal,
    post(name, body) {
      return fetch(`${hookgate.url}${config.hooks.path}/${name}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(body),
      });
    },
    async startAdminNow() {
      admin = await startAdmin(
        {
          host: settings.host,
          port: settings.port,
          token: ADMIN_TOKEN,
          logger,
          maxBodyBytes: () => config.hooks.maxBodyBytes,
          caps: config.server,
        },
        {
          readiness: async () => ({ ready: true, checks: { store: { ok: true } } }),
          journal,
          runs: hookgate.runtime ? runsView(hookgate.runtime.store) : undefined,
          dryRun: heldDryRun(hold),
          signFor: heldSigner(hold),
        },
      );
      stack.adminUrl = admin.url;
    },
    async stop() {
      journal.stop();
      await admin?.close();
      await hookgate.close();
    },
  };
  return stack;
}

export const chrome = ensureChromium();

/** Debian's Chromium through playwright-core, as the console's own browser test launches it. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: (chrome as { path: string }).path,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}

/**
 * An admin stack (startAdminStack's arguments) and Chromium for one file's tests: started
 * before them, closed after. Read `held.stack` and `held.browser` inside the tests.
 */
export function useConsoleStack(...args: Parameters<typeof startAdminStack>): {
  readonly stack: AdminStack;
  readonly browser: Browser;
} {
  const held = {} as { stack: AdminStack; browser: Browser };
  beforeAll(async () => {
    held.stack = await startAdminStack(...args);
    held.browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await held.browser?.close();
    await held.stack?.stop();
  });
  return held;
}

/**
 * Count the console's list reads rendered on `page` (from its next load): bumped in a task
 * queued once a list's JSON is read, so after the microtasks that render it (and merge what
 * the stream brought meanwhile). Returns the count's reader.
 */
export async function countListsRendered(page: Page): Promise<() => Promise<number>> {
  await page.addInitScript(() => {
    const w = globalThis as unknown as { __listsRendered: number };
    w.__listsRendered = 0;
    const proto = Response.prototype as unknown as { json: (this: Response) => Promise<unknown> };
    const json = proto.json;
    proto.json = function (this: Response) {
      const isList = new URL(this.url).pathname === '/api/requests';
      return json.call(this).then((value: unknown) => {
        if (isList) setTimeout(() => (w.__listsRendered += 1), 0);
        return value;
      });
    };
  });
  return () =>
    page.evaluate(() => (globalThis as unknown as { __listsRendered: number }).__listsRendered);
}

/** Counts list reads loadList is done with: JSON read (well or not) or fetch rejected. */
export async function countListReadsDone(page: Page): Promise<() => Promise<number>> {
  await page.addInitScript(() => {
    const w = globalThis as unknown as { __listsDone: number };
    w.__listsDone = 0;
    const here = (globalThis as unknown as { location: { href: string } }).location.href;
    const isList = (url: string) => new URL(url, here).pathname === '/api/requests';
    const done = () => setTimeout(() => (w.__listsDone += 1), 0);
    const proto = Response.prototype as unknown as { json: (this: Response) => Promise<unknown> };
    const json = proto.json;
    proto.json = function (this: Response) {
      const list = isList(this.url);
      return json.call(this).finally(() => {
        if (list) done();
      });
    };
    const fetch0 = globalThis.fetch;
    globalThis.fetch = function (this: unknown, input: string | URL | Request, init?: RequestInit) {
      const list = isList(String(input instanceof Request ? input.url : input));
      return fetch0.call(this, input, init).catch((error: unknown) => {
        if (list) done();
        throw error;
      });
    } as typeof fetch;
  });
  return () => page.evaluate(() => (globalThis as unknown as { __listsDone: number }).__listsDone);
}

/** The ids of the rows listed, top to bottom. */
export const rowIds = (page: Page) =>
  page
    .locator('#request-rows tr')
    .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id')));

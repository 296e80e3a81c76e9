/**
 * `/readyz`: the store takes a write, the transform processes are up, the
 * last reload succeeded, and the watched mailbox (where configured) has a
 * current watch and its consent. Each check says why when it fails.
 */
import type { MailboxState } from '../gmail/mailbox-store.ts';
import type { ActionStore } from '../queue/action-store.ts';
import type { ReloadOutcome } from '../reload/live-config.ts';
import type { Readiness } from './deps.ts';

export type ReadinessSources = {
  store: Pick<ActionStore, 'pruneIdempotency'>;
  transforms: () => { ready: number; total: number } | undefined;
  lastReload: () => ReloadOutcome | undefined;
  mail: (() => MailboxState) | undefined;
  now?: () => number;
};

type Check = { ok: boolean; detail?: string };

// A store that does not answer within this is not ready (a stuck disk, a held lock).
const STORE_TIMEOUT_MS = 2_000;

export async function checkReadiness(sources: ReadinessSources): Promise<Readiness> {
  const now = sources.now?.() ?? Date.now();
  const checks: Record<string, Check> = {
    store: await storeCheck(sources.store),
    transforms: transformsCheck(sources.transforms()),
    reload: reloadCheck(sources.lastReload()),
  };
  if (sources.mail) checks['mail'] = mailCheck(sources.mail(), now);
  return { ready: Object.values(checks).every((check) => check.ok), checks };
}

async function storeCheck(store: ReadinessSources['store']): Promise<Check> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Check>((resolve) => {
    timer = setTimeout(
      () => resolve({ ok: false, detail: `no answer within ${STORE_TIMEOUT_MS} ms` }),
      STORE_TIMEOUT_MS,
    );
  });
  // A write that removes nothing: it still needs the write lock and a writable file.
  const write = store.pruneIdempotency(0).then(
    (): Check => ({ ok: true }),
    (err: unknown): Check => ({ ok: false, detail: `a write failed: ${(err as Error).message}` }),
  );
  try {
    return await Promise.race([write, late]);
  } finally {
    clearTimeout(timer);
  }
}

function transformsCheck(processes: { ready: number; total: number } | undefined): Check {
  if (!processes) return { ok: true, detail: 'no transforms configured' };
  const detail = `${processes.ready} of ${processes.total} processes up`;
  return { ok: processes.ready > 0, detail };
}

function reloadCheck(last: ReloadOutcome | undefined): Check {
  if (!last) return { ok: true, detail: 'no reload since start' };
  if (last.ok) return { ok: true, detail: `reloaded at ${last.at} (${last.trigger})` };
  return { ok: false, detail: `reload at ${last.at} failed: ${last.error ?? 'unknown'}` };
}

function mailCheck(state: MailboxState, now: number): Check {
  if (state.needsConsent)
    return { ok: false, detail: 'the mailbox needs a new consent (gmail setup)' };
  if (state.watchExpirationMs === undefined) return { ok: false, detail: 'no watch yet' };
  if (state.watchExpirationMs <= now) return { ok: false, detail: 'the watch has expired' };
  return { ok: true, detail: `watch until ${new Date(state.watchExpirationMs).toISOString()}` };
}

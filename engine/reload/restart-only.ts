/**
 * Settings a reload cannot change in a running instance: the listeners and
 * their limits, where the data lives, the runtime's own schedule and
 * retries, the main session, the admin listener, the mail flow. A reload
 * applies everything else and names these, which wait for a restart (the keys inside them
 * that it does apply are left out of the comparison).
 */
import { isDeepStrictEqual } from 'node:util';
import type { Config } from '../../schemas/config.ts';

export const RESTART_ONLY = [
  'server',
  'hooks.authRateLimit',
  'hooks.gmail',
  'runtime.dataDir',
  'runtime.commitDelayMs',
  'runtime.concurrency',
  'runtime.maxPromptBytes',
  'runtime.retry',
  'runtime.heartbeat',
  'session',
  'admin',
  'reload',
  'log',
  'store',
] as const;

/**
 * Keys inside a restart-only setting that a reload does apply: the gmail preset's runs are
 * built from them with the configuration current at each message, like any mapping.
 */
const APPLIED_INSIDE: Readonly<Partial<Record<(typeof RESTART_ONLY)[number], readonly string[]>>> =
  { 'hooks.gmail': ['allowUnsafeExternalContent', 'model', 'thinking'] };

function at(config: Config, dotted: string): unknown {
  let value: unknown = config;
  for (const key of dotted.split('.')) {
    value =
      value !== null && typeof value === 'object'
        ? (value as Record<string, unknown>)[key]
        : undefined;
  }
  return value;
}

/** A restart-only setting's value without the keys a reload applies. */
function restartPart(config: Config, dotted: (typeof RESTART_ONLY)[number]): unknown {
  const value = at(config, dotted);
  const applied = APPLIED_INSIDE[dotted];
  if (!applied || value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).filter(([key]) => !applied.includes(key)));
}

/** The restart-only settings that differ between the running and the new configuration. */
export function restartOnlyChanges(running: Config, next: Config): string[] {
  return RESTART_ONLY.filter(
    (dotted) => !isDeepStrictEqual(restartPart(running, dotted), restartPart(next, dotted)),
  );
}

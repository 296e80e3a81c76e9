/**
 * Settings a reload cannot change in a running instance: the listeners and
 * their limits, where the data lives, the runtime's own schedule and
 * retries, the main session, the admin listener, the mail flow. A reload
 * applies everything else and names these, which wait for a restart.
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

/** The restart-only settings that differ between the running and the new configuration. */
export function restartOnlyChanges(running: Config, next: Config): string[] {
  return RESTART_ONLY.filter((dotted) => !isDeepStrictEqual(at(running, dotted), at(next, dotted)));
}

/**
 * The heartbeat schedule setting: a duration (`30s`, `30m`, `1h`, `1d`), a
 * cron expression (node-cron, 5 or 6 fields), or `off`.
 */
import cron from 'node-cron';

export type Schedule =
  | { kind: 'off' }
  | { kind: 'interval'; ms: number }
  | { kind: 'cron'; expression: string };

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parse `runtime.heartbeat.every`; null when it is none of the three forms. */
export function parseSchedule(every: string): Schedule | null {
  const text = every.trim();
  if (text === 'off') return { kind: 'off' };
  const duration = /^(\d+)(ms|s|m|h|d)$/.exec(text);
  if (duration) {
    const ms = Number(duration[1]) * (UNITS[duration[2] as string] as number);
    return ms >= 1000 ? { kind: 'interval', ms } : null;
  }
  return cron.validate(text) ? { kind: 'cron', expression: text } : null;
}

/**
 * The audit as `hookgate check` prints it: one `warning: <setting>: <message>`
 * line per warning (terminal-safe: a host name comes from the config file), and
 * the exit status they mean (1 under --strict, else 0).
 */
import type { Config } from '../../schemas/config.ts';
import { type AuditWarning, auditConfig } from '../audit.ts';
import { terminalText } from './terminal-text.ts';

/** The line `hookgate check` prints for one warning. */
export function warningLine(warning: AuditWarning): string {
  return terminalText(`warning: ${warning.setting}: ${warning.message}`);
}

/** Print the config's warnings; returns check's exit status (1 for any warning under strict). */
export function reportAudit(config: Config, out: (line: string) => void, strict: boolean): number {
  return reportWarnings(auditConfig(config), out, strict);
}

/** Print `warnings`; returns check's exit status (1 for any warning under strict). */
export function reportWarnings(
  warnings: readonly AuditWarning[],
  out: (line: string) => void,
  strict: boolean,
): number {
  for (const warning of warnings) out(warningLine(warning));
  return strict && warnings.length > 0 ? 1 : 0;
}

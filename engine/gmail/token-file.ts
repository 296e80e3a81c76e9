/**
 * The refresh token `hookgate gmail setup` obtained, kept in the data
 * directory (file mode 0600), never in the config file: one file per
 * account. Read at start when the config names no refresh token.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

function fileOf(dataDir: string, account: string): string {
  // The account is an address: keep the name to safe characters.
  return path.join(dataDir, `gmail-${account.toLowerCase().replace(/[^a-z0-9@._-]/g, '_')}.json`);
}

/** The stored refresh token of an account, if any. */
export function readRefreshToken(dataDir: string, account: string): string | undefined {
  const file = fileOf(dataDir, account);
  if (!existsSync(file)) return undefined;
  try {
    const value = JSON.parse(readFileSync(file, 'utf8')) as { refreshToken?: unknown };
    return typeof value.refreshToken === 'string' && value.refreshToken !== ''
      ? value.refreshToken
      : undefined;
  } catch {
    return undefined;
  }
}

/** Store a refresh token for an account (0600, written whole or not at all). */
export function writeRefreshToken(dataDir: string, account: string, refreshToken: string): string {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = fileOf(dataDir, account);
  const temp = `${file}.tmp`;
  writeFileSync(temp, `${JSON.stringify({ account, refreshToken })}\n`, { mode: 0o600 });
  chmodSync(temp, 0o600);
  renameSync(temp, file);
  return file;
}

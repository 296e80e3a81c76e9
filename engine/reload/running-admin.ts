/**
 * The admin listener keeps the token it started with until a restart (its
 * settings are restart-only), so a reload is checked against that token, not
 * only against the new file's: a file that gives the running admin token to
 * the hooks or the gateway (and a new one to the admin listener) would let
 * every sender holding it use the admin API. Pure.
 */
import type { Config } from '../../schemas/config.ts';

/** The problem (`path: message`) when `next` shares a token with the admin listener `running` has; else undefined. */
export function sharedAdminToken(running: Config, next: Config): string | undefined {
  const admin = running.admin?.token;
  if (!admin) return undefined;
  const path =
    next.hooks.token === admin
      ? 'hooks.token'
      : next.gateway.token === admin
        ? 'gateway.token'
        : undefined;
  return path
    ? `${path}: must differ from the admin token in force (the admin listener keeps its token until a restart)`
    : undefined;
}

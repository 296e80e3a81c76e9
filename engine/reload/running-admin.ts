/**
 * The admin listener keeps the token it started with until a restart (its
 * settings are restart-only), so a reload is checked against that token, not
 * only against the new file's: a file that gives the running admin token to
 * the hooks, the gateway or a route's signing or verify settings (and a new
 * one to the admin listener) would let every sender holding it use the admin
 * API. Pure.
 */
import type { Config } from '../../schemas/config.ts';
import { sharedWithAdmin } from '../config/hook-credentials.ts';

/** The problem (`path: message`) when `next` shares a credential with the admin listener `running` has; else undefined. */
export function sharedAdminToken(running: Config, next: Config): string | undefined {
  const path = sharedWithAdmin(next, running.admin?.token);
  return path
    ? `${path}: must differ from the admin token in force (the admin listener keeps its token until a restart)`
    : undefined;
}

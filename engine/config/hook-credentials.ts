/**
 * The credentials a configuration gives to senders and to the hooks' surroundings: the hook and
 * gateway tokens, the mail push token, the signed presets' and routes' secrets, the
 * subscription handshakes' verify tokens (which travel in URLs). The admin listener's token must
 * be none of them: each is held by someone who must not reach the admin API. Pure.
 */
import { SIGNED_PRESET_NAMES } from '../../presets/registry.ts';
import type { Config } from '../../schemas/config.ts';

type AuthSecrets = { secret?: string; secrets?: readonly string[]; verifyToken?: string };

/** Each credential with the path that sets it. */
export function hookCredentials(config: Config): Array<{ path: string; value: string }> {
  const found: Array<{ path: string; value: string }> = [];
  const add = (path: string, value: string | undefined) => {
    if (value) found.push({ path, value });
  };
  const addAuth = (at: string, auth: AuthSecrets | undefined) => {
    if (!auth) return;
    add(`${at}.secret`, auth.secret);
    for (const [i, secret] of (auth.secrets ?? []).entries()) add(`${at}.secrets.${i}`, secret);
    add(`${at}.verifyToken`, auth.verifyToken);
  };
  add('hooks.token', config.hooks.token);
  add('gateway.token', config.gateway.token);
  add('hooks.gmail.pushToken', config.hooks.gmail?.pushToken);
  for (const preset of SIGNED_PRESET_NAMES)
    addAuth(`hooks.${preset}.auth`, config.hooks[preset]?.auth);
  for (const [i, mapping] of (config.hooks.mappings ?? []).entries())
    addAuth(`hooks.mappings.${i}.auth`, mapping.auth as AuthSecrets | undefined);
  return found;
}

/** The first credential of `config` that is `adminToken`, by its path; undefined when none. */
export function sharedWithAdmin(
  config: Config,
  adminToken: string | undefined,
): string | undefined {
  if (!adminToken) return undefined;
  return hookCredentials(config).find(({ value }) => value === adminToken)?.path;
}

// A configuration is read-only once loaded: its credentials are listed once, not per request.
const valuesOf = new WeakMap<Config, readonly string[]>();

/** The credentials' values alone, listed once per configuration (the journal asks per request). */
export function credentialValues(config: Config): readonly string[] {
  let values = valuesOf.get(config);
  if (!values) {
    values = Object.freeze(hookCredentials(config).map(({ value }) => value));
    valuesOf.set(config, values);
  }
  return values;
}

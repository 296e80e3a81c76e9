/**
 * Which settings of a configuration hold credentials, known by the key names along their
 * dotted path (`hooks.token`, `hooks.mappings.0.auth.secrets.1`): the same paths in the parsed
 * document as in the validated config, so they serve where the schema cannot yet say (the
 * document's YAML, `${VAR}` substitution). Pure.
 */

/**
 * A setting that may hold a credential anywhere in its value: a token, a secret, a password, a
 * key, a URL (its password), a header's value. Broad on purpose: it decides what an error may
 * quote, never what is refused.
 */
export const CREDENTIAL_SETTING =
  /(?:token|secret|password|key|url)(?:s?\.\d+)?$|(?:^|\.)headers\./i;

// A key ending in token, secret or password (or a list of them), or a header's value.
const SECRET_NAME = /(?:token|secret|password)(?:s?\.\d+)?$|(?:^|\.)headers\.[^.]+$/i;
// Named so, but not secrets: the heartbeat's reply marker, a switch.
const NOT_SECRET = /(?:^|\.)(?:ackToken|requireToken)$/i;

/**
 * Whether a setting's whole value, as written, is a secret: any key ending in token, secret or
 * password (`hooks.token`, `gateway.token`, `admin.token`, `auth.secret`, `auth.secrets.N`,
 * `verifyToken`, `pushToken`, `clientSecret`, `refreshToken`, `botToken`, `appPassword`) and a
 * header's value. Not `ackToken` or `requireToken`; not a URL or a template, which may hold a
 * secret but do not start with one.
 */
export function holdsSecret(setting: string): boolean {
  return SECRET_NAME.test(setting) && !NOT_SECRET.test(setting);
}

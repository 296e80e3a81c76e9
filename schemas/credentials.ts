/**
 * The shapes a credential must have to be sent, by where it travels: one table every config
 * schema takes its credentials' settings from, so a value that cannot be sent (a space in a
 * URL path, a line break in a header) stops the load, at boot, in `hookgate check` and in a
 * reload, after `${VAR}` substitution, instead of failing every delivery or every request.
 * Each shape is as wide as its carrier allows, never a guess at a product's format; a
 * product's own format only where its server refuses anything else (Telegram's). The patterns
 * are told in words (engine/validation.ts), never with the value.
 */

// C0 controls, DEL and C1 controls: no product issues them and no form lets one be typed; one in
// a credential is a line ending or a paste carried in (a CRLF env file's \r).
const CONTROL = '\\x00-\\x1f\\x7f-\\x9f';

/**
 * Any credential, also one never sent (a signing secret) or sent encoded (a query value, a
 * form field): not blank, no control character. Inner and outer spaces are left alone: a
 * GitHub secret or a BlueBubbles password is a phrase its owner chose.
 */
export const PRINTABLE_SECRET_PATTERN = `^[^${CONTROL}]*[^\\s${CONTROL}][^${CONTROL}]*$`;

/**
 * A whole header value (RFC 9110 field-value as a sender should write it): visible ASCII,
 * spaces inside only (a receiver trims them at the ends; undici refuses CR, LF and NUL; past
 * ASCII it is sent as Latin-1 bytes, not the text).
 */
export const HEADER_VALUE_PATTERN = '^[\\x21-\\x7e](?:[\\x20-\\x7e]*[\\x21-\\x7e])?$';

/**
 * A token sent after an auth scheme (`Bearer`, `Bot`) or as a URL's path segment: visible
 * ASCII, no space (a space ends the token in a header, and is no part of any issued token).
 */
export const TOKEN_PATTERN = '^[\\x21-\\x7e]+$';

/** An OAuth client_id, client_secret or refresh_token (RFC 6749 Appendix A: VSCHAR), not blank. */
export const OAUTH_VALUE_PATTERN = '^[\\x20-\\x7e]*[\\x21-\\x7e][\\x20-\\x7e]*$';

/** An http(s) URL hookgate calls with a secret: no white space or control character anywhere. */
export const HTTP_URL_PATTERN = `^https?://[^\\s${CONTROL}]+$`;

/**
 * A Telegram bot token, written raw into the URL's path (`/bot<token>/sendMessage`): the bot's
 * id, a colon, then characters a path segment holds as they are (RFC 3986 pchar, no %). The
 * Bot API server (tdlib/telegram-bot-api, ClientManager::send) answers 401 to any token that
 * has no colon, holds a /, is longer than 80 characters or whose id is not a positive integer
 * under 2^54 (at most 17 digits, no leading 0), so no token it accepts is refused here.
 */
export const TELEGRAM_TOKEN_PATTERN = "^[1-9][0-9]{0,16}:[A-Za-z0-9._~!$&'()*+,;=:@-]+$";

/**
 * A command runner's environment value (often the agent's API key): any text but a NUL, which
 * ends a C string, so Node refuses to spawn a process whose environment holds one.
 */
export const ENV_VALUE_PATTERN = '^[^\\x00]*$';

/**
 * A value compared exactly with one another party sends (the audience Google signs into a push's
 * token, any case-sensitive string): no control character, no white space at either end. Such a
 * character is a line ending or a space carried in (a CRLF env file's \r) that the other party
 * never sends, so every comparison would fail.
 */
export const COMPARED_TEXT_PATTERN = `^[^\\s${CONTROL}](?:[^${CONTROL}]*[^\\s${CONTROL}])?$`;

/** A command runner's argument: not blank, and no NUL (as an environment value). */
export const ARGUMENT_PATTERN = '^[^\\x00]*[^\\s\\x00][^\\x00]*$';

/** An HTTP header name (RFC 9110 token). */
export const HEADER_NAME_PATTERN = "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$";

/** What each shape asks, in words: an error names the setting and this, never the value. */
export const CREDENTIAL_WORDS: ReadonlyMap<string, string> = new Map([
  [
    PRINTABLE_SECRET_PATTERN,
    'must not be blank or hold a control character (a line break, a tab, a NUL)',
  ],
  [
    HEADER_VALUE_PATTERN,
    'must be visible ASCII characters (inner spaces allowed): it travels in an HTTP header',
  ],
  [
    TOKEN_PATTERN,
    'must be visible ASCII characters without spaces: it is sent in an HTTP header or a URL',
  ],
  [
    OAUTH_VALUE_PATTERN,
    'must be printable ASCII characters, not blank (all OAuth allows): it is sent to the token endpoint',
  ],
  [
    HTTP_URL_PATTERN,
    'must be an http:// or https:// URL without white space or control characters',
  ],
  [
    TELEGRAM_TOKEN_PATTERN,
    "must be a Telegram bot token, the bot's id, a colon and the secret (123456789:AAH...), at most 80 characters, no space, / or %: the Bot API refuses any other, and it is sent in the URL's path",
  ],
  [
    ENV_VALUE_PATTERN,
    'must not hold a NUL character: a process environment cannot carry one, so every run would fail to start',
  ],
  [
    ARGUMENT_PATTERN,
    'must not be blank or hold a NUL character: a command line cannot carry one, so every run would fail to start',
  ],
  [HEADER_NAME_PATTERN, "is not an HTTP header name (letters, digits and !#$%&'*+.^_`|~-)"],
  [
    COMPARED_TEXT_PATTERN,
    'must not hold a control character (a line break, a tab, a NUL) nor begin or end with white space: it is compared exactly with what is sent',
  ],
]);

/**
 * The ajv format of a URL hookgate calls: one the WHATWG parser (fetch's, undici's) reads, of
 * the http or https scheme. The pattern alone let through what has the shape but no URL (a port
 * past 65535, `[::1` without its `]`, a `%` in the host), which failed at every call.
 */
export const HTTP_URL_FORMAT = 'http-url';

/** Whether `text` parses as an http(s) URL (the scheme as the parser reads it). */
export function isHttpUrl(text: string): boolean {
  const protocol = URL.parse(text)?.protocol;
  return protocol === 'http:' || protocol === 'https:';
}

/** The formats the config's shapes use, registered where the validators are built. */
export const CREDENTIAL_FORMATS = {
  [HTTP_URL_FORMAT]: { type: 'string', validate: isHttpUrl },
} as const;

/** What each format asks, in words: an error names the setting and this, never the value. */
export const FORMAT_WORDS: ReadonlyMap<string, string> = new Map([
  [
    HTTP_URL_FORMAT,
    'does not parse as a URL (a port of digits up to 65535, an IPv6 host in [ ], a host without %; special characters of a user name or password percent-encoded)',
  ],
]);

/** The schema of each shape, for the settings that hold one. */
export const credential = {
  secret: { type: 'string', minLength: 1, pattern: PRINTABLE_SECRET_PATTERN },
  header: { type: 'string', minLength: 1, pattern: HEADER_VALUE_PATTERN },
  token: { type: 'string', minLength: 1, pattern: TOKEN_PATTERN },
  oauth: { type: 'string', minLength: 1, pattern: OAUTH_VALUE_PATTERN },
  url: { type: 'string', pattern: HTTP_URL_PATTERN, format: HTTP_URL_FORMAT },
  telegramToken: { type: 'string', minLength: 1, maxLength: 80, pattern: TELEGRAM_TOKEN_PATTERN },
  headerName: { type: 'string', pattern: HEADER_NAME_PATTERN },
  envValue: { type: 'string', pattern: ENV_VALUE_PATTERN },
  argument: { type: 'string', minLength: 1, pattern: ARGUMENT_PATTERN },
  compared: { type: 'string', minLength: 1, pattern: COMPARED_TEXT_PATTERN },
} as const;

/** Whether `value` can be sent as a token after an auth scheme (a key read from the environment). */
export function isSendableToken(value: string): boolean {
  return new RegExp(TOKEN_PATTERN).test(value);
}

/**
 * JSON Schema of `hooks.gmail`: the mail-notification flow. OpenClaw's keys
 * with their defaults (so an existing block can be pasted in), plus what
 * hookgate needs to receive Gmail's Pub/Sub pushes itself: the OAuth client,
 * how a push is authenticated, and the Gmail API's address. The flow runs
 * when `account` is set. `hookgate gmail setup` writes this block.
 */
import { credential } from './credentials.ts';
import { THINKING_LEVELS } from './payloads.ts';

const nonEmpty = { type: 'string', minLength: 1, pattern: '\\S' } as const;
const { url } = credential;

export const GMAIL_DEFAULTS = Object.freeze({
  label: 'INBOX',
  topic: 'gog-gmail-watch',
  subscription: 'gog-gmail-watch-push',
  maxBytes: 20_000,
  renewEveryMinutes: 720,
  tokenUrl: 'https://oauth2.googleapis.com/token',
  authUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
  jwksUrl: 'https://www.googleapis.com/oauth2/v3/certs',
  issuers: Object.freeze(['https://accounts.google.com', 'accounts.google.com']),
  apiBaseUrl: 'https://gmail.googleapis.com',
  serve: Object.freeze({ bind: '127.0.0.1', port: 8788, path: '/gmail-pubsub' }),
});

export const gmailSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    // The mailbox to watch; the flow runs only when it is set.
    account: { type: 'string', pattern: '^[^\\s@]+@[^\\s@]+$' },
    label: { ...nonEmpty, default: GMAIL_DEFAULTS.label },
    // A short name (setup) or the full projects/<p>/topics/<t> path (the watch call).
    topic: { ...nonEmpty, default: GMAIL_DEFAULTS.topic },
    subscription: { ...nonEmpty, default: GMAIL_DEFAULTS.subscription },
    // The push secret in `push.mode: token` (?token= on the push route only, or x-gog-token).
    pushToken: { ...credential.header, minLength: 16 },
    // OpenClaw's hook URL for its separate fetcher; hookgate fetches itself and ignores it, but
    // a value that is no absolute http(s) URL was never OpenClaw's either: a mistake, refused.
    hookUrl: url,
    includeBody: { type: 'boolean', default: true },
    maxBytes: {
      type: 'integer',
      minimum: 256,
      maximum: 1_000_000,
      default: GMAIL_DEFAULTS.maxBytes,
    },
    renewEveryMinutes: {
      type: 'integer',
      minimum: 5,
      maximum: 10_080,
      default: GMAIL_DEFAULTS.renewEveryMinutes,
    },
    // The push listener of its own.
    serve: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        bind: { ...nonEmpty, default: GMAIL_DEFAULTS.serve.bind },
        port: { type: 'integer', minimum: 0, maximum: 65_535, default: GMAIL_DEFAULTS.serve.port },
        path: { type: 'string', pattern: '^/[^\\s?#]*$', default: GMAIL_DEFAULTS.serve.path },
      },
    },
    // OpenClaw's Tailscale settings: accepted so its block pastes in; hookgate does not run Tailscale.
    tailscale: { type: 'object' },
    oauth: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        // Form fields of the token request (the id also in the consent URL's query).
        clientId: credential.oauth,
        clientSecret: credential.oauth,
        // Else the one `hookgate gmail setup` stored in the data directory.
        refreshToken: credential.oauth,
        tokenUrl: { ...url, default: GMAIL_DEFAULTS.tokenUrl },
        // Where `hookgate gmail setup` sends the operator to consent.
        authUrl: { ...url, default: GMAIL_DEFAULTS.authUrl },
      },
    },
    push: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        mode: { enum: ['oidc', 'token'], default: 'oidc' },
        // oidc: the subscription's audience (default: the push endpoint URL Pub/Sub was given),
        // any case-sensitive string, compared exactly with the token's.
        audience: credential.compared,
        serviceAccountEmail: { type: 'string', pattern: '^[^\\s@]+@[^\\s@]+$' },
        jwksUrl: { ...url, default: GMAIL_DEFAULTS.jwksUrl },
        issuers: {
          type: 'array',
          minItems: 1,
          items: nonEmpty,
          default: [...GMAIL_DEFAULTS.issuers],
        },
      },
    },
    apiBaseUrl: { ...url, default: GMAIL_DEFAULTS.apiBaseUrl },
    // The gmail preset's agent runs.
    allowUnsafeExternalContent: { type: 'boolean' },
    model: nonEmpty,
    thinking: { enum: THINKING_LEVELS },
  },
} as const;

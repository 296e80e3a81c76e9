/**
 * JSON Schema of a route's `auth` block: how a mapping (or a preset) is
 * authenticated. `token` is the hook token; the others verify a provider's
 * signature over the raw body instead. The `RouteAuth` type derives from it.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { credential } from './credentials.ts';

/** Authentication schemes a route may declare. */
export const AUTH_SCHEMES = [
  'token',
  'github',
  'stripe',
  'slack',
  'standard-webhooks',
  'hmac',
] as const;

export type AuthScheme = (typeof AUTH_SCHEMES)[number];

/** Most secrets one route may list (rotation: current, previous, ...): each costs a MAC per request. */
export const MAX_SECRETS = 8;

// A signing secret (a MAC's key, never sent) or a handshake's verify token (sent encoded in a
// query): any text its owner chose, but no control character (schemas/credentials.ts).
const secretText = { ...credential.secret, maxLength: 4096 } as const;
// An HTTP header name (RFC 9110 token), compared lower-cased: the table's one copy of the shape.
const headerName = credential.headerName;

export const authSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['scheme'],
  properties: {
    scheme: { enum: AUTH_SCHEMES },
    // One secret, or several for rotation (`secrets: [current, previous]`); any one verifies.
    secret: secretText,
    secrets: { type: 'array', minItems: 1, maxItems: MAX_SECRETS, items: secretText },
    // Schemes with a signed timestamp: how far it may lie from now, in either direction.
    toleranceSeconds: { type: 'integer', minimum: 1, maximum: 86_400 },
    // Also require the hook token (for senders that can add a header).
    requireToken: { type: 'boolean' },
    // hmac only: where the signature is and how it is made.
    header: headerName,
    algorithm: { enum: ['sha256', 'sha1', 'sha512'] },
    encoding: { enum: ['hex', 'base64'] },
    prefix: { type: 'string', maxLength: 32 },
    // hmac only: the signed bytes, `{{body}}` and `{{headers.<name>}}` joined by literal text.
    signedContent: { type: 'string', minLength: 1, maxLength: 256 },
    // hmac only: a header holding unix seconds, checked against toleranceSeconds.
    timestampHeader: headerName,
    // Meta-style subscription handshake: GET ?hub.mode=subscribe&hub.verify_token=... answered
    // with hub.challenge when the token matches.
    verifyToken: secretText,
  },
} as const;

export type RouteAuth = FromSchema<typeof authSchema>;

/** A signed preset's auth settings: the scheme is the preset's; the secrets are the deployment's. */
export const presetAuthSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    secret: secretText,
    secrets: authSchema.properties.secrets,
    toleranceSeconds: authSchema.properties.toleranceSeconds,
    requireToken: { type: 'boolean' },
  },
} as const;

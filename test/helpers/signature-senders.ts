/**
 * The senders behind the signature tests: for each scheme, how a provider
 * signs a delivery (with the provider's own library where one exists), how
 * its secrets look, and which headers carry the signature, so the shared
 * contract suite and the properties can run against every verifier alike.
 */
import { createHmac } from 'node:crypto';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { Webhook as SvixWebhook } from 'svix';
import type { RouteAuth } from '../../schemas/auth.ts';
import type { HeaderValues } from '../../engine/auth/verifier.ts';

/** Headers as a test writes them: names in any case, a list for a repeated header. */
export type TestHeaders = Record<string, string | readonly string[]>;

/** A HeaderValues over test headers (every occurrence, names compared lower-cased). */
export function headerValues(headers: TestHeaders): HeaderValues {
  const byName = new Map<string, string[]>();
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    byName.set(key, [...(byName.get(key) ?? []), ...(typeof value === 'string' ? [value] : value)]);
  }
  return (name) => byName.get(name) ?? [];
}

/** How one provider signs, for the shared suites. */
export type Sender = {
  /** Name in test titles. */
  name: string;
  /** The route's auth block for these secrets (and tolerance, for timestamped schemes). */
  auth: (secrets: string[], toleranceSeconds?: number) => RouteAuth;
  /** A secret of the scheme's form made from random bytes. */
  secret: (bytes: Uint8Array) => string;
  /** The headers a provider sends for this body at this time, signed with this secret. */
  sign: (secret: string, body: string, timestamp: number) => Promise<Record<string, string>>;
  /** Headers the signature depends on (each refused when repeated). */
  signedHeaders: readonly string[];
  /** True when a signed timestamp is checked against the window. */
  timestamped: boolean;
};

const stripe = new Stripe('sk_test_x');
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

/** Standard Webhooks message ids are the sender's; any dot-free token will do. */
export const MESSAGE_ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';

const hmacHex = (secret: string, content: string) =>
  createHmac('sha256', secret).update(content).digest('hex');

export const github: Sender = {
  name: 'github',
  auth: (secrets) => ({ scheme: 'github', secrets }),
  secret: hex,
  sign: async (secret, body) => ({ 'X-Hub-Signature-256': await githubSign(secret, body) }),
  signedHeaders: ['x-hub-signature-256'],
  timestamped: false,
};

export const stripeSender: Sender = {
  name: 'stripe',
  auth: (secrets, toleranceSeconds) => ({ scheme: 'stripe', secrets, toleranceSeconds }),
  secret: (bytes) => `whsec_${hex(bytes)}`,
  sign: async (secret, payload, timestamp) => ({
    'Stripe-Signature': stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp }),
  }),
  signedHeaders: ['stripe-signature'],
  timestamped: true,
};

/** Slack has no signing library: HMAC by hand (bolt cross-checks it in the Slack tests). */
export const slack: Sender = {
  name: 'slack',
  auth: (secrets, toleranceSeconds) => ({ scheme: 'slack', secrets, toleranceSeconds }),
  secret: hex,
  sign: async (secret, body, timestamp) => ({
    'X-Slack-Signature': `v0=${hmacHex(secret, `v0:${timestamp}:${body}`)}`,
    'X-Slack-Request-Timestamp': String(timestamp),
  }),
  signedHeaders: ['x-slack-signature', 'x-slack-request-timestamp'],
  timestamped: true,
};

export const standardWebhooks: Sender = {
  name: 'standard-webhooks',
  auth: (secrets, toleranceSeconds) => ({ scheme: 'standard-webhooks', secrets, toleranceSeconds }),
  secret: (bytes) => `whsec_${b64(bytes)}`,
  sign: async (secret, body, timestamp) => ({
    'webhook-id': MESSAGE_ID,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': new StandardWebhook(secret).sign(
      MESSAGE_ID,
      new Date(timestamp * 1000),
      body,
    ),
  }),
  signedHeaders: ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
  timestamped: true,
};

export const svix: Sender = {
  ...standardWebhooks,
  name: 'standard-webhooks (svix headers)',
  sign: async (secret, body, timestamp) => ({
    'svix-id': MESSAGE_ID,
    'svix-timestamp': String(timestamp),
    'svix-signature': new SvixWebhook(secret).sign(MESSAGE_ID, new Date(timestamp * 1000), body),
  }),
  signedHeaders: ['svix-id', 'svix-timestamp', 'svix-signature'],
};

/** Shopify through the generic scheme: base64, no prefix. */
export const shopify: Sender = {
  name: 'hmac (shopify)',
  auth: (secrets) => ({
    scheme: 'hmac',
    secrets,
    header: 'X-Shopify-Hmac-Sha256',
    encoding: 'base64',
  }),
  secret: hex,
  sign: async (secret, body) => ({
    'X-Shopify-Hmac-Sha256': createHmac('sha256', secret).update(body).digest('base64'),
  }),
  signedHeaders: ['x-shopify-hmac-sha256'],
  timestamped: false,
};

/** Meta through the generic scheme: `sha256=` and lower-case hex, like GitHub. */
export const meta: Sender = {
  name: 'hmac (meta)',
  auth: (secrets) => ({
    scheme: 'hmac',
    secrets,
    header: 'X-Hub-Signature-256',
    prefix: 'sha256=',
  }),
  secret: hex,
  sign: async (secret, body) => ({ 'X-Hub-Signature-256': `sha256=${hmacHex(secret, body)}` }),
  signedHeaders: ['x-hub-signature-256'],
  timestamped: false,
};

/** A sender signing a timestamp header and the body (sha512, base64, prefixed). */
export const timestampedHmac: Sender = {
  name: 'hmac (timestamped)',
  auth: (secrets, toleranceSeconds) => ({
    scheme: 'hmac',
    secrets,
    header: 'X-Signature',
    algorithm: 'sha512',
    encoding: 'base64',
    prefix: 'v1=',
    signedContent: '{{headers.x-timestamp}}.{{body}}',
    timestampHeader: 'X-Timestamp',
    toleranceSeconds,
  }),
  secret: hex,
  sign: async (secret, body, timestamp) => ({
    'X-Signature': `v1=${createHmac('sha512', secret).update(`${timestamp}.${body}`).digest('base64')}`,
    'X-Timestamp': String(timestamp),
  }),
  signedHeaders: ['x-signature', 'x-timestamp'],
  timestamped: true,
};

/** Every sender, for suites that run against all schemes. */
export const SENDERS: readonly Sender[] = [
  github,
  stripeSender,
  slack,
  standardWebhooks,
  svix,
  shopify,
  meta,
  timestampedHmac,
];

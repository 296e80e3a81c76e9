/**
 * Signing a request as a route's sender would, with the route's first
 * configured secret: what `hookgate test --sign` adds so a payload file can
 * be tried against a signed route through the very stages the server runs.
 * Never used on the request path.
 */
import { createHmac, type KeyObject, randomUUID } from 'node:crypto';
import type { RouteAuth } from '../../schemas/auth.ts';
import { compileSignedContent } from './signed-content.ts';
import { decodeStandardWebhooksKey } from './standard-webhooks-keys.ts';

/** Headers that sign `raw` for the route's scheme, or a sentence saying why it cannot be signed. */
export function signatureHeaders(
  auth: RouteAuth,
  raw: Buffer,
  nowSeconds: number,
  given: Readonly<Record<string, string>>,
): Record<string, string> | string {
  const secret = auth.secret ?? auth.secrets?.[0];
  if (secret === undefined) return 'the route has no secret to sign with';
  const hex = (key: string | KeyObject, ...parts: (string | Buffer)[]) => mac('sha256', key, parts);
  const t = String(nowSeconds);
  switch (auth.scheme) {
    case 'token':
      return {};
    case 'github':
      return { 'x-hub-signature-256': `sha256=${hex(secret, raw).toString('hex')}` };
    case 'stripe':
      return { 'stripe-signature': `t=${t},v1=${hex(secret, `${t}.`, raw).toString('hex')}` };
    case 'slack':
      return {
        'x-slack-request-timestamp': t,
        'x-slack-signature': `v0=${hex(secret, `v0:${t}:`, raw).toString('hex')}`,
      };
    case 'standard-webhooks': {
      const key = decodeStandardWebhooksKey(secret);
      if (typeof key === 'string') return key;
      if (key.kind !== 'hmac') return 'a whpk_ public key verifies but cannot sign';
      const id = given['webhook-id'] ?? `msg_${randomUUID()}`;
      const signature = hex(key.key, `${id}.${t}.`, raw).toString('base64');
      return { 'webhook-id': id, 'webhook-timestamp': t, 'webhook-signature': `v1,${signature}` };
    }
    case 'hmac':
      return signHmac(auth, secret, raw, t, given);
  }
}

function signHmac(
  auth: RouteAuth,
  secret: string,
  raw: Buffer,
  t: string,
  given: Readonly<Record<string, string>>,
): Record<string, string> | string {
  if (auth.header === undefined) return 'an hmac route needs auth.header';
  const headers: Record<string, string> = { ...given };
  if (auth.timestampHeader !== undefined) headers[auth.timestampHeader.toLowerCase()] = t;
  const template = compileSignedContent(auth.signedContent ?? '{{body}}');
  if (typeof template === 'string') return template;
  const parts = template.pieces.map((piece) =>
    piece.kind === 'body' ? raw : piece.kind === 'text' ? piece.text : (headers[piece.name] ?? ''),
  );
  const digest = mac(auth.algorithm ?? 'sha256', secret, parts);
  const signature = digest.toString(auth.encoding ?? 'hex');
  const out: Record<string, string> = {
    [auth.header.toLowerCase()]: `${auth.prefix ?? ''}${signature}`,
  };
  if (auth.timestampHeader !== undefined) out[auth.timestampHeader.toLowerCase()] = t;
  return out;
}

function mac(
  algorithm: string,
  key: string | KeyObject,
  parts: readonly (string | Buffer)[],
): Buffer {
  const hmac = createHmac(algorithm, key);
  for (const part of parts) hmac.update(part);
  return hmac.digest();
}

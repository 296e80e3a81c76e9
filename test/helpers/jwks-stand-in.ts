/**
 * A local stand-in for Google's signing keys and the push tokens they sign:
 * RSA key pairs made with jose, a node:http server on 127.0.0.1 (port 0)
 * serving their public JWKs (or whatever hostile answer a test sets), and
 * tokens signed with SignJWT carrying the claims Pub/Sub sends.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type CryptoKey,
  exportJWK,
  generateKeyPair,
  type JWK,
  type JWTPayload,
  SignJWT,
} from 'jose';
import type { PushAuthSettings } from '../../engine/gmail/push-auth.ts';

export type SigningKey = { kid: string; privateKey: CryptoKey; jwk: JWK };

/** An RS256 key pair and its public JWK as Google publishes it. */
export async function makeKey(kid: string): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return { kid, privateKey, jwk };
}

export const AUDIENCE = 'https://hookgate.example/gmail-pubsub';
export const SERVICE_ACCOUNT = 'gmail-push@my-project.iam.gserviceaccount.com';
export const ISSUERS = ['https://accounts.google.com', 'accounts.google.com'];

/** OIDC push settings that trust the key set at `jwksUrl`. */
export function oidcSettings(jwksUrl: string): PushAuthSettings {
  return {
    push: {
      mode: 'oidc',
      audience: AUDIENCE,
      serviceAccountEmail: SERVICE_ACCOUNT,
      jwksUrl,
      issuers: ISSUERS,
    },
  };
}

/** The credentials of a push carrying `token` as a bearer token. */
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** The claims of a Pub/Sub push token, issued now for an hour. */
export function pushClaims(nowSeconds = Math.floor(Date.now() / 1000)): JWTPayload {
  return {
    iss: 'https://accounts.google.com',
    aud: AUDIENCE,
    azp: '111122223333444455556',
    sub: '111122223333444455556',
    email: SERVICE_ACCOUNT,
    email_verified: true,
    iat: nowSeconds,
    exp: nowSeconds + 3600,
  };
}

/** A token signed with `key`; `claims` replace or (as undefined) remove the defaults. */
export async function signToken(
  key: SigningKey,
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  const payload: Record<string, unknown> = { ...pushClaims(), ...claims };
  for (const name of Object.keys(payload)) if (payload[name] === undefined) delete payload[name];
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT', ...header })
    .sign(key.privateKey);
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export type KeyServer = {
  url: string;
  /** Requests seen so far. */
  hits: number;
  /** Serve these public keys as a JWKS. */
  serveKeys(keys: readonly SigningKey[]): void;
  /** Answer with a handler of the test's own. */
  respond(handler: Handler): void;
  close(): Promise<void>;
};

/** A key server on 127.0.0.1 at a free port, serving `keys`. */
export async function startKeyServer(keys: readonly SigningKey[]): Promise<KeyServer> {
  const keySet = (list: readonly SigningKey[]): Handler => {
    const body = JSON.stringify({ keys: list.map((k) => k.jwk) });
    return (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    };
  };
  let handler = keySet(keys);
  const server = createServer((req, res) => {
    state.hits++;
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const state: KeyServer = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth2/v3/certs`,
    hits: 0,
    serveKeys(list) {
      handler = keySet(list);
    },
    respond(next) {
      handler = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return state;
}

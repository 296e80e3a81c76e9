/**
 * The key set endpoint as an adversary: an OIDC push whose keys cannot be
 * loaded (endpoint down, slow, answering garbage, a huge body, too many or
 * unusable keys, a redirect) is refused as keys_unavailable within the
 * fetch timeout, each failure costs one request, and pushes are accepted
 * again once the endpoint recovers.
 */
import type { ServerResponse } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { exportJWK } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { createPushAuthenticator, type PushAuthOptions } from '../engine/gmail/push-auth.ts';
import {
  bearer,
  makeKey,
  oidcSettings,
  type SigningKey,
  signToken,
  startKeyServer,
} from './helpers/jwks-stand-in.ts';

let current: SigningKey;
let stranger: SigningKey;

beforeAll(async () => {
  [current, stranger] = await Promise.all([makeKey('key-1'), makeKey('key-1')]);
});

const authenticatorFor = (url: string, options: PushAuthOptions = {}) =>
  createPushAuthenticator(oidcSettings(url), options);

describe('a key set endpoint that is down, slow or hostile', () => {
  const keySet = (keys: unknown[]) => JSON.stringify({ keys });
  const answer =
    (status: number, body: string, headers: Record<string, string> = {}) =>
    (_req: unknown, res: ServerResponse) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(body);
    };
  const privateJwk = async () => ({ ...(await exportJWK(current.privateKey)), kid: current.kid });

  it.each([
    ['status 500', async () => answer(500, '{"error":"internal"}')],
    ['a redirect (never followed)', async () => answer(302, '', { location: '/elsewhere' })],
    ['garbage instead of JSON', async () => answer(200, '<html>maintenance</html>')],
    ['JSON that is not a key set', async () => answer(200, '{"keys":"none"}')],
    ['an empty key set', async () => answer(200, keySet([]))],
    ['a private key in the set', async () => answer(200, keySet([await privateJwk()]))],
    ['two keys under one kid', async () => answer(200, keySet([current.jwk, stranger.jwk]))],
    [
      'too many keys (17, the right one among them)',
      async () => {
        const others = Array.from({ length: 16 }, (_, i) => ({ ...stranger.jwk, kid: `k${i}` }));
        return answer(200, keySet([current.jwk, ...others]));
      },
    ],
    [
      'a huge body (10 MB, declared)',
      async () => answer(200, keySet([current.jwk, { pad: 'x'.repeat(10_000_000) }])),
    ],
    [
      'a huge chunked body (never ends)',
      async () => (_req: unknown, res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"keys":[');
        const chunk = `${JSON.stringify(current.jwk)},`.repeat(100);
        const pump = () => {
          if (!res.destroyed && res.write(chunk)) setImmediate(pump);
          else if (!res.destroyed) res.once('drain', pump);
        };
        pump();
      },
    ],
    ['no answer at all', async () => () => {}],
    [
      'a body that stalls half way',
      async () => (_req: unknown, res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"keys":[');
      },
    ],
  ])('%s -> keys_unavailable, without hanging', { timeout: 15_000 }, async (_, handler) => {
    const hostile = await startKeyServer([current]);
    try {
      hostile.respond(await handler());
      const auth = authenticatorFor(hostile.url, { keysTimeoutMs: 300 });
      const result = await auth.authenticate(bearer(await signToken(current)));
      expect(result).toEqual({ ok: false, reason: 'keys_unavailable' });
      expect(hostile.hits).toBe(1);
    } finally {
      await hostile.close();
    }
  });

  it('an endpoint that is down -> keys_unavailable; accepted once it is back', async () => {
    const down = await startKeyServer([current]);
    down.respond((req) => req.socket.destroy());
    try {
      const auth = authenticatorFor(down.url, { keysTimeoutMs: 300 });
      const token = await signToken(current);
      expect(await auth.authenticate(bearer(token))).toEqual({
        ok: false,
        reason: 'keys_unavailable',
      });
      down.serveKeys([current]);
      expect((await auth.authenticate(bearer(token))).ok).toBe(true);
    } finally {
      await down.close();
    }
  });

  it('nothing listening on the port -> keys_unavailable', async () => {
    const port = await closedPort();
    const auth = authenticatorFor(`http://127.0.0.1:${port}/oauth2/v3/certs`, {
      keysTimeoutMs: 300,
    });
    const result = await auth.authenticate(bearer(await signToken(current)));
    expect(result).toEqual({ ok: false, reason: 'keys_unavailable' });
  });
});

// A port that was free a moment ago and has nothing listening now.
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

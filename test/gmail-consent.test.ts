/**
 * The OAuth consent of `hookgate gmail setup` against a local token
 * endpoint: the printed URL asks for offline read-only access with PKCE; the
 * browser's redirect (played by the test) with the right state gives the
 * refresh token; a forged state or a refused consent does not.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GMAIL_SCOPE, runConsent } from '../engine/gmail/consent.ts';

let server: Server;
let tokenUrl = '';
const exchanges: URLSearchParams[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      const form = new URLSearchParams(body);
      exchanges.push(form);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          access_token: 'at',
          expires_in: 3599,
          refresh_token: `rt-for-${form.get('code')}`,
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  tokenUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const settings = () => ({
  account: 'me@example.com',
  clientId: 'client-1',
  clientSecret: 'secret-1',
  authUrl: 'https://accounts.example/auth',
  tokenUrl,
  timeoutMs: 10_000,
});

/** Play the browser: follow the printed URL's redirect_uri with a code and a state. */
function browser(mutate: (params: URLSearchParams) => void = () => undefined) {
  let printed: URL | undefined;
  let answered: Promise<Response> | undefined;
  const show = (url: string) => {
    printed = new URL(url);
    const back = new URL(printed.searchParams.get('redirect_uri') as string);
    back.searchParams.set('code', 'code-42');
    back.searchParams.set('state', printed.searchParams.get('state') as string);
    mutate(back.searchParams);
    answered = fetch(back);
  };
  return { show, printed: () => printed as URL, answered: () => answered as Promise<Response> };
}

describe('gmail consent', () => {
  it('asks for offline read-only access with PKCE and returns the refresh token', async () => {
    const b = browser();
    const token = await runConsent(settings(), b.show);
    expect(token).toBe('rt-for-code-42');
    const url = b.printed();
    expect(url.origin + url.pathname).toBe('https://accounts.example/auth');
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      client_id: 'client-1',
      response_type: 'code',
      scope: GMAIL_SCOPE,
      access_type: 'offline',
      login_hint: 'me@example.com',
      code_challenge_method: 'S256',
    });
    expect((await b.answered()).status).toBe(200);
    const exchange = exchanges.at(-1) as URLSearchParams;
    expect(exchange.get('grant_type')).toBe('authorization_code');
    const challenge = createHash('sha256')
      .update(exchange.get('code_verifier') as string)
      .digest('base64url');
    expect(challenge).toBe(url.searchParams.get('code_challenge'));
  });

  it('a redirect with a forged state is refused and gives no token', async () => {
    const b = browser((params) => params.set('state', 'forged'));
    const consent = runConsent({ ...settings(), timeoutMs: 1_000 }, b.show);
    await expect(consent).rejects.toThrow('no consent arrived in time');
    expect((await b.answered()).status).toBe(400);
  });

  it('a refused consent says so', async () => {
    const b = browser((params) => {
      params.delete('code');
      params.set('error', 'access_denied');
    });
    await expect(runConsent(settings(), b.show)).rejects.toThrow('consent refused: access_denied');
  });
});

/**
 * The OAuth consent of `hookgate gmail setup`: a loopback listener on
 * 127.0.0.1 receives Google's redirect, the authorisation URL (with PKCE and
 * a state value) is printed for the operator to open, and the code is
 * exchanged for a refresh token. Offline access and the read-only Gmail
 * scope are asked for; nothing but the refresh token is kept.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseAnswerJson } from '../outbound/answer-json.ts';
import { outboundCall } from '../outbound/http-client.ts';

export const GMAIL_SCOPE = 'https://www.googleapis.com/auth/gmail.readonly';
const CALLBACK = '/oauth2callback';
const EXCHANGE_TIMEOUT_MS = 15_000;
const MAX_ANSWER_BYTES = 65_536;

export type ConsentSettings = {
  account: string;
  clientId: string;
  clientSecret?: string;
  authUrl: string;
  tokenUrl: string;
  /** How long to wait for the operator (default 10 minutes). */
  timeoutMs?: number;
};

/** Run the consent: `show` gets the URL to open; resolves with the refresh token. */
export async function runConsent(
  settings: ConsentSettings,
  show: (url: string) => void,
): Promise<string> {
  const state = randomBytes(24).toString('base64url');
  const verifier = randomBytes(48).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const { code, redirectUri } = await awaitRedirect(
    state,
    settings.timeoutMs ?? 600_000,
    (redirect) => {
      const url = new URL(settings.authUrl);
      const params = {
        client_id: settings.clientId,
        redirect_uri: redirect,
        response_type: 'code',
        scope: GMAIL_SCOPE,
        access_type: 'offline',
        prompt: 'consent',
        login_hint: settings.account,
        state,
        code_challenge: challenge,
        code_challenge_method: 'S256',
      };
      for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
      show(url.toString());
    },
  );
  return exchange(settings, code, redirectUri, verifier);
}

/** Listen on a free loopback port until Google redirects back with the code (state checked). */
function awaitRedirect(
  state: string,
  timeoutMs: number,
  ready: (redirectUri: string) => void,
): Promise<{ code: string; redirectUri: string }> {
  return new Promise((resolve, reject) => {
    let redirectUri = '';
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (url.pathname !== CALLBACK) {
        res.writeHead(404).end();
        return;
      }
      const error = url.searchParams.get('error');
      const code = url.searchParams.get('code');
      if (!sameState(url.searchParams.get('state') ?? '', state)) {
        res
          .writeHead(400, { 'content-type': 'text/plain' })
          .end('State mismatch: start the setup again.');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(
        error
          ? 'Consent refused; you can close this tab.'
          : 'hookgate has its Gmail access; you can close this tab.',
      );
      finish(
        error
          ? new Error(`consent refused: ${error.slice(0, 100)}`)
          : code
            ? { code, redirectUri }
            : new Error('no code in the redirect'),
      );
    });
    const timer = setTimeout(() => finish(new Error('no consent arrived in time')), timeoutMs);
    function finish(result: Error | { code: string; redirectUri: string }): void {
      clearTimeout(timer);
      server.close();
      server.closeAllConnections();
      if (result instanceof Error) reject(result);
      else resolve(result);
    }
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      redirectUri = `http://127.0.0.1:${port}${CALLBACK}`;
      ready(redirectUri);
    });
  });
}

function sameState(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

async function exchange(
  settings: ConsentSettings,
  code: string,
  redirectUri: string,
  verifier: string,
): Promise<string> {
  const form = new URLSearchParams({
    code,
    client_id: settings.clientId,
    redirect_uri: redirectUri,
    grant_type: 'authorization_code',
    code_verifier: verifier,
    ...(settings.clientSecret !== undefined && { client_secret: settings.clientSecret }),
  });
  const result = await outboundCall(settings.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
    timeoutMs: EXCHANGE_TIMEOUT_MS,
    maxBytes: MAX_ANSWER_BYTES,
  });
  if (result.kind !== 'answer')
    throw new Error(`the token endpoint did not answer (${result.kind})`);
  let answer: unknown;
  try {
    answer = parseAnswerJson(result.text);
  } catch {
    throw new Error(`the token endpoint answered ${result.status} without JSON`);
  }
  const fields = (answer ?? {}) as Record<string, unknown>;
  if (result.status !== 200) {
    const reason = typeof fields['error'] === 'string' ? fields['error'].slice(0, 100) : 'unknown';
    throw new Error(`the token endpoint refused the code (${result.status} ${reason})`);
  }
  const refresh = fields['refresh_token'];
  if (typeof refresh !== 'string' || refresh === '' || refresh.length > 4096) {
    throw new Error('the token endpoint gave no refresh token (offline access not granted?)');
  }
  return refresh;
}

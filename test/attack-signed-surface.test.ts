/**
 * Attacks on signed routes, part two: what an unverified caller learns,
 * Ed25519 amplification, secrets in the log, the subscription handshake,
 * what a mapping sees of the signature, the dry run, and the wire (repeated
 * headers, concurrent copies, latin1 bytes). One test per attack, named after
 * it, against a real server.
 */
import { createHmac, generateKeyPairSync, randomBytes } from 'node:crypto';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createVerifier } from '../engine/auth/registry.ts';
import { resolveConfig } from '../engine/config.ts';
import { startHookgate } from '../engine/hookgate.ts';
import { dryRun } from '../engine/ingress/dry-run.ts';
import { compileRoutes, routeContext } from '../engine/ingress/routes.ts';
import { compileMappings } from '../engine/mappings.ts';
import { policyFromConfig } from '../engine/policy.ts';
import {
  actionCount,
  answer,
  attackServers,
  GH_SECRET,
  ghMapping,
  githubHeaders,
  rawBytes,
  STRIPE_SECRET,
  stripeHeaders,
  stripeMapping,
} from './helpers/attack-signed.ts';
import { TOKEN, type TestServer, tempDir } from './helpers/hookgate.ts';
import { rawExchange } from './helpers/raw-http.ts';

const { start } = attackServers();

describe('what an unverified caller learns', () => {
  // A forged but well-formed signature passes the header check; the body checks then answer first.
  // An oversized body is 413 before it can be verified (reading it all to verify it is what the
  // limit prevents): a documented exception; the content type waits for the signature.
  it.each([['an odd content type', { 'content-type': 'image/png' }, 'x']])(
    'probing with %s gets the generic 401 on a signed path, as on an unknown hook',
    async (_, extra, body) => {
      const s = await start({ maxBodyBytes: 1024 });
      const forged = { 'x-hub-signature-256': `sha256=${'a'.repeat(64)}`, ...extra };
      const signedPath = await answer(await s.post('gh', body, { token: null, headers: forged }));
      const unknown = await answer(
        await s.post('nothing-here', body, { token: null, headers: forged }),
      );
      // Nothing verified yet: both must be the same generic 401.
      expect(signedPath.status).toBe(401);
      expect(signedPath.body.replace(/"requestId":"[^"]*"/, '')).toBe(
        unknown.body.replace(/"requestId":"[^"]*"/, ''),
      );
    },
  );

  it('an unverified body that is not JSON is answered 401, never a parse error', async () => {
    const s = await start();
    const forged = { 'x-hub-signature-256': `sha256=${'a'.repeat(64)}` };
    const res = await s.post('gh', '{"n": [[[', { token: null, headers: forged });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
  });
});

describe('amplification', () => {
  it('one unsigned request with eight v1a entries against eight whpk keys is refused without 64 verifications', async () => {
    const publicKeys = Array.from({ length: 8 }, () => {
      const { publicKey } = generateKeyPairSync('ed25519');
      const x = publicKey.export({ format: 'jwk' }).x as string;
      return `whpk_${Buffer.from(x, 'base64url').toString('base64')}`;
    });
    const hmacKeys = Array.from({ length: 8 }, () => `whsec_${randomBytes(24).toString('base64')}`);
    const route = (path: string, secrets: string[]) => ({
      id: path,
      match: { path },
      action: 'wake',
      textTemplate: path,
      auth: { scheme: 'standard-webhooks', secrets },
    });
    const s = await start({
      maxBodyBytes: 262_144,
      mappings: [route('ed', publicKeys), route('mac', hmacKeys)],
    });
    const entries = (version: string, bytes: number, count: number) =>
      Array.from(
        { length: count },
        () => `${version},${randomBytes(bytes).toString('base64')}`,
      ).join(' ');
    const headers = (signature: string) => ({
      'webhook-id': 'msg_amplify',
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': signature,
    });
    const body = Buffer.alloc(262_000, 0x20);
    // Eight entries x eight public keys would be 64 full Ed25519 checks: refused from the headers.
    const verifier = createVerifier({ scheme: 'standard-webhooks', secrets: publicKeys }, 'auth');
    const values = (h: Record<string, string>) => (name: string) => (h[name] ? [h[name]] : []);
    const now = Math.floor(Date.now() / 1000);
    expect(verifier.precheck(values(headers(entries('v1a', 64, 8))), now)).toBe('malformed');
    expect(verifier.precheck(values(headers(entries('v1a', 64, 1))), now)).toBeUndefined();
    const res = await s.post('ed', body, { token: null, headers: headers(entries('v1a', 64, 8)) });
    expect(res.status).toBe(401);
    // HMAC entries cost one MAC per key whatever their count: not bounded the same way.
    const mac = await s.post('mac', body, { token: null, headers: headers(entries('v1', 32, 8)) });
    expect(mac.status).toBe(401);
  });
});

describe('the log', () => {
  it('no secret, signature, token or unverified body reaches the log', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const leaks: string[] = [];
    const { dir, cleanup } = tempDir();
    const loaded = resolveConfig(
      {
        server: { host: '127.0.0.1', port: 0 },
        hooks: { enabled: true, token: TOKEN, mappings: [ghMapping, stripeMapping] },
      },
      { baseDir: dir, dataDir: dir, env: {} },
    );
    const gate = await startHookgate(loaded, {
      logger: pino({ level: 'debug' }, sink),
      runtime: false,
    });
    try {
      const send = (name: string, body: string, headers: Record<string, string>) =>
        fetch(`${gate.url}/hooks/${name}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body,
        });
      const secretBody = JSON.stringify({ n: 'unverified-body-marker' });
      const forged = `sha256=${'c'.repeat(64)}`;
      const good = JSON.stringify({ n: 'good' });
      const goodHeaders = await githubHeaders(good);
      leaks.push(goodHeaders['x-hub-signature-256'].slice('sha256='.length));
      const stale = stripeHeaders(good, Math.floor(Date.now() / 1000) - 3600);
      const statuses = [
        (await send('gh', secretBody, { 'x-hub-signature-256': forged })).status,
        (await send('gh', good, goodHeaders)).status,
        (await send('pay', good, stale)).status,
        (await send('wake', '{"text":"x"}', { authorization: 'Bearer wrong-token-guess-1234' }))
          .status,
      ];
      expect(statuses).toEqual([401, 200, 401, 401]);
    } finally {
      await gate.close();
      cleanup();
    }
    const log = lines.join('');
    expect(log).toContain('"authFailure":"mismatch"');
    expect(log).toContain('"authFailure":"stale"');
    for (const leak of [
      GH_SECRET,
      STRIPE_SECRET,
      TOKEN,
      'wrong-token-guess-1234',
      'c'.repeat(64),
      'unverified-body-marker',
      ...leaks,
    ]) {
      expect(log).not.toContain(leak);
    }
  });
});

describe('the subscription handshake (GET)', () => {
  const VERIFY = 'meta-verify-token-0123456789';
  const meta = {
    id: 'meta',
    match: { path: 'meta' },
    action: 'wake',
    textTemplate: 'meta',
    auth: {
      scheme: 'hmac',
      secret: 'meta-app-secret-0123456789',
      header: 'x-hub-signature-256',
      prefix: 'sha256=',
      verifyToken: VERIFY,
    },
  };
  const get = (s: TestServer, hook: string, query: Record<string, string>) =>
    fetch(`${s.url}/hooks/${hook}?${new URLSearchParams(query)}`);

  it('a challenge written as HTML comes back as plain text a browser will not sniff', async () => {
    const s = await start({ mappings: [meta] });
    const challenge = '<svg/onload=alert(1)>';
    const res = await get(s, 'meta', {
      'hub.mode': 'subscribe',
      'hub.verify_token': VERIFY,
      'hub.challenge': challenge,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.text()).toBe(challenge);
  });

  it('verify-token guesses count toward the per-address lock', async () => {
    const s = await start({
      mappings: [meta],
      authRateLimit: { maxFailures: 3, windowSeconds: 600, lockoutSeconds: 600 },
    });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const query = {
        'hub.mode': 'subscribe',
        'hub.verify_token': `guess-${i}`,
        'hub.challenge': 'c',
      };
      statuses.push((await get(s, 'meta', query)).status);
    }
    const right = { 'hub.mode': 'subscribe', 'hub.verify_token': VERIFY, 'hub.challenge': 'c' };
    statuses.push((await get(s, 'meta', right)).status);
    expect(statuses).toEqual([403, 403, 403, 429]);
  });
});

describe('what a mapping sees', () => {
  it("a generic hmac route's own signature header is hidden from templates even when its name looks harmless", async () => {
    // Trello signs in X-Trello-Webhook (HMAC-SHA1, base64, over the body and the callback URL).
    const secret = 'trello-secret-0123456789';
    const callback = 'https://agent.example/hooks/trello';
    const s = await start({
      mappings: [
        {
          id: 'trello',
          match: { path: 'trello' },
          action: 'wake',
          textTemplate: 'card moved {{headers.x-trello-webhook}}',
          auth: {
            scheme: 'hmac',
            secret,
            header: 'x-trello-webhook',
            algorithm: 'sha1',
            encoding: 'base64',
            signedContent: `{{body}}${callback}`,
          },
        },
      ],
    });
    const body = JSON.stringify({ action: { type: 'updateCard' } });
    const signature = createHmac('sha1', secret).update(`${body}${callback}`).digest('base64');
    const res = await s.post('trello', body, {
      token: null,
      headers: { 'x-trello-webhook': signature },
    });
    expect(res.status).toBe(200);
    // The route knows this header is its signature; no rule, template or transform should read it.
    const stored = JSON.stringify(await s.store.listActions({ limit: 10 }));
    expect(stored).not.toContain(signature);
  });
});

describe('hookgate test', () => {
  it('the dry run refuses a provider delivery that the server refuses on a requireToken route', async () => {
    const mapping = { ...ghMapping, auth: { ...ghMapping.auth, requireToken: true } };
    const s = await start({ mappings: [mapping] });
    const { config } = resolveConfig(
      { hooks: { enabled: true, token: TOKEN, mappings: [mapping] } },
      { baseDir: s.dataDir, env: {} },
    );
    const policy = policyFromConfig(config);
    const routes = compileRoutes(
      config,
      compileMappings(config, policy, s.dataDir),
      routeContext(config, policy),
    );
    const body = JSON.stringify({ n: 8 });
    // Exactly what GitHub sends: a signature, no hook token.
    const headers = await githubHeaders(body);
    const served = await s.post('gh', body, { token: null, headers });
    const dry = await dryRun(config, routes, {
      hook: 'gh',
      body: Buffer.from(body),
      headers: { ...headers, 'content-type': 'application/json' },
      query: '',
    });
    expect(served.status).toBe(401);
    expect(dry.status).toBe(served.status);
  });
});

describe('the wire', () => {
  it('a signature header sent twice on the wire is refused even when one copy is valid', async () => {
    const s = await start();
    const body = JSON.stringify({ n: 5 });
    const good = await githubSign(GH_SECRET, body);
    const request = [
      'POST /hooks/gh HTTP/1.1',
      'Host: x',
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Hub-Signature-256: ${good}`,
      `x-hub-signature-256: ${good}`,
      'Connection: close',
      '',
      body,
    ].join('\r\n');
    const text = await rawExchange(s.url, request);
    expect(text).toMatch(/^HTTP\/1\.1 401 /);
    expect(await actionCount(s)).toBe(0);
  });

  it('concurrent copies of one signed delivery store one action', async () => {
    const s = await start();
    const body = JSON.stringify({ n: 6 });
    const headers = await githubHeaders(body);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => s.post('gh', body, { token: null, headers })),
    );
    expect(answers.map((res) => res.status)).toEqual(Array(8).fill(200));
    expect(await actionCount(s)).toBe(1);
  });

  it('a generic hmac signature over a latin1 header byte verifies only over the bytes sent', async () => {
    const secret = 'hmac-secret-0123456789';
    const s = await start({
      mappings: [
        {
          id: 'h',
          match: { path: 'h' },
          action: 'wake',
          textTemplate: 'h',
          auth: {
            scheme: 'hmac',
            secret,
            header: 'x-sig',
            signedContent: '{{headers.x-meta}}.{{body}}',
          },
        },
      ],
    });
    const body = '{"n":7}';
    // 0xe9 on the wire; a verifier that re-encoded it as UTF-8 would sign two bytes instead.
    const meta = Buffer.from([0x63, 0x61, 0x66, 0xe9]);
    const mac = (content: Buffer) => createHmac('sha256', secret).update(content).digest('hex');
    const overWire = mac(Buffer.concat([meta, Buffer.from(`.${body}`)]));
    const overUtf8 = mac(Buffer.from(`café.${body}`, 'utf8'));
    const send = (sig: string) =>
      rawBytes(
        s.url,
        Buffer.concat([
          Buffer.from(
            `POST /hooks/h HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nx-sig: ${sig}\r\nx-meta: `,
          ),
          meta,
          Buffer.from(`\r\nConnection: close\r\n\r\n${body}`),
        ]),
      );
    expect(await send(overUtf8)).toMatch(/^HTTP\/1\.1 401 /);
    expect(await send(overWire)).toMatch(/^HTTP\/1\.1 200 /);
  });
});

/**
 * Secrets over plain http: the mail flow sends the OAuth client secret and the refresh token to
 * `oauth.tokenUrl`, and every Gmail call carries the access token to `apiBaseUrl`. An `http://`
 * address (a typo, a copied example) would put them on the wire in clear text for anyone on the
 * path to read, as an http key set would let anyone forge pushes. The service must refuse to
 * start with such an address, naming the setting, before any call is made; plain http on
 * loopback (a local stand-in, a sidecar) stays allowed, as for `push.jwksUrl`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../engine/config.ts';
import { type GmailStandIn, gmailSettings, startGmailStandIn } from './helpers/gmail-stand-in.ts';
import { startTestServer, tempDir } from './helpers/hookgate.ts';

const ACCOUNT = 'me@example.com';
let gmail: GmailStandIn;
const data = tempDir();

beforeAll(async () => {
  gmail = await startGmailStandIn();
});
afterAll(async () => {
  await gmail.close();
  data.cleanup();
});

function settings(more: { oauth?: Record<string, unknown>; apiBaseUrl?: string }) {
  const base = gmailSettings(gmail, ACCOUNT, {
    push: { mode: 'token' },
    pushToken: 'push-secret-token-plain-http',
  });
  return {
    hooks: {
      presets: ['gmail'],
      gmail: {
        ...base,
        oauth: { ...(base['oauth'] as object), ...more.oauth },
        ...(more.apiBaseUrl && { apiBaseUrl: more.apiBaseUrl }),
      },
    },
  };
}

async function bootError(config: Record<string, unknown>): Promise<unknown> {
  try {
    const server = await startTestServer(config, { dataDir: data.dir });
    await server.close();
    return undefined;
  } catch (err) {
    return err;
  }
}

describe('OAuth and Gmail addresses over plain http (secrets in clear text)', () => {
  it.each([
    [
      'the refresh token and client secret to an http token endpoint',
      { oauth: { tokenUrl: 'http://oauth2.googleapis.com/token' } },
      'hooks.gmail.oauth.tokenUrl',
    ],
    [
      'the access token to an http Gmail address',
      { apiBaseUrl: 'http://gmail.googleapis.com' },
      'hooks.gmail.apiBaseUrl',
    ],
    [
      'a loopback look-alike host name',
      { oauth: { tokenUrl: 'http://127.0.0.1.example.net/token' } },
      'hooks.gmail.oauth.tokenUrl',
    ],
  ])('%s: refused at boot, naming the setting', async (_, more, path) => {
    const err = await bootError(settings(more));
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).path).toBe(path);
    // Refused before any call: nothing was sent anywhere.
    expect(gmail.tokenForms).toHaveLength(0);
  });

  it('plain http on loopback still boots (the stand-in)', async () => {
    expect(await bootError(settings({}))).toBeUndefined();
  });
});

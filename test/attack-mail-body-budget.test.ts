/**
 * A mail body allowed by hooks.gmail.maxBytes but past what a mapping may
 * render (hooks.maxRenderedFieldBytes): every long mail was refused as
 * rendered_too_large and skipped, where the README promises a body cut at
 * maxBytes. Such a pair of settings now stops the start, naming the setting
 * and the largest maxBytes the bounds allow; settings that fit still start.
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

function config(maxBytes: number, maxRenderedFieldBytes: number, includeBody = true) {
  return {
    hooks: {
      presets: ['gmail'],
      maxRenderedFieldBytes,
      gmail: {
        ...gmailSettings(gmail, ACCOUNT, {
          push: { mode: 'token' },
          pushToken: 'push-secret-token-body-budget',
        }),
        maxBytes,
        includeBody,
      },
    },
  };
}

async function boot(settings: Record<string, unknown>): Promise<unknown> {
  try {
    const server = await startTestServer(settings, { dataDir: data.dir });
    await server.stop();
    return undefined;
  } catch (err) {
    return err;
  }
}

describe('a mail body larger than a mapping may render (long mail skipped)', () => {
  it('stops the start, naming hooks.gmail.maxBytes and what fits', async () => {
    const err = await boot(config(200_000, 65_536));
    expect(err).toBeInstanceOf(ConfigError);
    expect(String((err as Error).message)).toMatch(/hooks\.gmail\.maxBytes: .*at most 60\d{3} /);
  });

  it('starts when the body fits, or when bodies are not read', async () => {
    expect(await boot(config(50_000, 65_536))).toBeUndefined();
    expect(await boot(config(200_000, 65_536, false))).toBeUndefined();
  });
});

/**
 * `hookgate gmail stop` that fails says why: the token endpoint out of reach is not "Gmail
 * refused", a refused refresh token asks for the consent again, and a refusal Gmail did make
 * is named by its status and reason. It used to print `Gmail refused users.stop (backoff)` for
 * all of these, a network failure included, without the reason it had.
 */
import { createServer } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gmailSettings, startGmailStandIn, type GmailStandIn } from './helpers/gmail-stand-in.ts';
import { runHookgate, tempDir, writeConfig } from './helpers/process.ts';

const temp = tempDir();
let gmail: GmailStandIn;

beforeAll(async () => {
  gmail = await startGmailStandIn();
});
afterAll(async () => {
  await gmail.close();
  temp.cleanup();
});

/** A loopback port nothing listens on (taken, then given back). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function configWith(name: string, oauth: Record<string, unknown> = {}): string {
  const settings = gmailSettings(gmail, 'me@example.com', {});
  const config = {
    hooks: {
      enabled: true,
      token: 'a-hook-token-of-some-length-1234',
      gmail: { ...settings, oauth: { ...(settings.oauth as object), ...oauth } },
    },
    runtime: { dataDir: path.join(temp.dir, name) },
  };
  return writeConfig(temp.dir, JSON.stringify(config), `${name}.yaml`);
}

describe('gmail stop failing', () => {
  it('names the token endpoint out of reach, not a refusal by Gmail', async () => {
    const port = await closedPort();
    const config = configWith('unreachable', { tokenUrl: `http://127.0.0.1:${port}/token` });
    const result = await runHookgate(['gmail', 'stop', '--config', config]);
    expect(result.code).toBe(1);
    expect(result.stderr).not.toContain('Gmail refused');
    expect(result.stderr).toContain('token endpoint failed: ECONNREFUSED');
    expect(result.stderr).toContain('try again');
    expect(gmail.stops()).toBe(0);
  });

  it('names the status and reason of a refusal Gmail made', async () => {
    gmail.failNext(403);
    const result = await runHookgate(['gmail', 'stop', '--config', configWith('forbidden')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Gmail refused users.stop: Gmail HTTP 403 (forbidden)');
  });

  it('asks for the consent again when the refresh token is refused', async () => {
    gmail.revokeRefreshToken();
    const result = await runHookgate(['gmail', 'stop', '--config', configWith('revoked')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('refresh token was refused');
    expect(result.stderr).toContain('hookgate gmail setup --account me@example.com');
  });
});

/**
 * End-to-end: how long a signed route remembers a delivery. Delivery ids are
 * kept for `hooks.deliveryRetentionSeconds`, not the (here much shorter)
 * Idempotency-Key window, and survive a restart on the same store: a GitHub
 * redelivery after a deploy is still a replay.
 */
import { randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { octokitExample, sendRaw, storedActions, until } from './helpers/signed-http.ts';

const SECRET = 'retention-secret-a1b2c3d4e5f6';
const push = JSON.stringify(octokitExample('push'));

const settings = {
  hooks: {
    idempotencyWindowSeconds: 1,
    deliveryRetentionSeconds: 3600,
    presets: ['github'],
    github: { auth: { secret: SECRET } },
  },
};

async function redeliver(server: TestServer, delivery: string) {
  return sendRaw(server, 'github', push, {
    'content-type': 'application/json',
    'x-github-event': 'push',
    'x-github-delivery': delivery,
    'x-hub-signature-256': await sign(SECRET, push),
  });
}

describe('delivery retention', () => {
  const temp = tempDir();
  afterAll(() => temp.cleanup());

  it('keeps a delivery id after the Idempotency-Key window has passed', async () => {
    const server = await startTestServer(settings);
    try {
      const delivery = randomUUID();
      const first = await redeliver(server, delivery);
      expect(first.status).toBe(200);
      expect(
        (await server.post('wake', { text: 'a' }, { headers: { 'idempotency-key': 'k' } })).status,
      ).toBe(200);
      // Wait, by asking, until the 1-second token window has forgotten its key.
      await until('the Idempotency-Key window to pass', async () => {
        const res = await server.post(
          'wake',
          { text: 'a' },
          { headers: { 'idempotency-key': 'k' } },
        );
        return res.headers.get('idempotent-replayed') === null;
      });
      const again = await redeliver(server, delivery);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.text).toBe(first.text);
    } finally {
      await server.stop();
    }
  });

  it('keeps a delivery id across a restart on the same store', async () => {
    const delivery = randomUUID();
    const before = await startTestServer(settings, { dataDir: temp.dir });
    const first = await redeliver(before, delivery);
    expect(first.status).toBe(200);
    await before.close();
    const after = await startTestServer(settings, { dataDir: temp.dir });
    try {
      const again = await redeliver(after, delivery);
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.text).toBe(first.text);
      expect(await storedActions(after)).toHaveLength(1);
    } finally {
      await after.close();
    }
  });
});

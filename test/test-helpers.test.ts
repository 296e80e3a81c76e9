/**
 * The test helpers themselves: whatever a test overrides, a test server
 * listens on an ephemeral port, so the suite runs beside `npm start`.
 */
import { describe, expect, it } from 'vitest';
import { startTestServer } from './helpers/hookgate.ts';

describe('test helpers', () => {
  it('a test that overrides server settings still listens on port 0, never 8787', async () => {
    const server = await startTestServer({ server: { requestTimeoutMs: 400 } });
    try {
      const port = Number(new URL(server.url).port);
      expect(port).toBeGreaterThan(0);
      expect(port).not.toBe(8787);
      expect((await server.post('wake', { text: 'hello' })).status).toBe(200);
    } finally {
      await server.stop();
    }
  });
});

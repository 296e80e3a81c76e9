import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';

describe('smoke', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.stop());

  it('accepts a wake', async () => {
    const res = await server.post('wake', { text: 'hello' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ ok: true, mode: 'now' });
  });
});

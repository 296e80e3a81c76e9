/**
 * Attack: query parameter pollution on a mapped hook. Mappings read `query`; with a name given
 * twice the last copy won, while a proxy or filter in front that reads the first copy allowed
 * the request for another value (`?env=staging&env=production` passed a staging-only filter and
 * ran as production). A repeated name is refused 400 `invalid_query`, nothing stored, as a form's
 * repeated field is. /wake and /agent read no query and are not affected.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';

describe('a query parameter given twice on a mapped hook', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        mappings: [
          {
            id: 'deploy',
            match: { path: 'deploy', when: { '==': [{ var: 'query.env' }, 'production'] } },
            action: 'wake',
            templates: { text: 'deploy {{payload.version}} to {{query.env}}' },
          },
          {
            id: 'staging',
            match: { path: 'deploy' },
            action: 'wake',
            templates: { text: 'staging {{payload.version}}' },
          },
        ],
      },
    });
  });
  afterAll(async () => {
    await server.stop();
  });

  const stored = async () => (await server.store.listActions({ limit: 1000 })).length;
  const send = (path: string) =>
    fetch(`${server.url}/hooks/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: path.startsWith('wake') ? '{"text":"disk full"}' : '{"version":"1.2"}',
    });

  it.each([
    ['as written', 'deploy?env=staging&env=production', 'env'],
    ['once percent-encoded', 'deploy?env=staging&%65nv=production', 'env'],
    ['with an empty copy', 'deploy?env=production&env=', 'env'],
  ])(
    'a repeated name (%s) is refused 400 invalid_query naming it, nothing stored',
    async (_, path, field) => {
      const before = await stored();
      const answer = await send(path);
      expect(answer.status).toBe(400);
      const body = (await answer.json()) as { error: { code: string; details: unknown } };
      expect(body.error.code).toBe('invalid_query');
      expect(body.error.details).toEqual({ field });
      expect(await stored()).toBe(before);
    },
  );

  it('a long repeated name comes back shortened', async () => {
    const name = 'n'.repeat(5000);
    const answer = await send(`deploy?${name}=1&${name}=2`);
    expect(answer.status).toBe(400);
    const body = (await answer.json()) as { error: { details: { field: string } } };
    expect(body.error.details.field.length).toBeLessThanOrEqual(65);
  });

  it('distinct names are read as before', async () => {
    const answer = await send('deploy?env=production&team=web');
    expect(answer.status).toBe(200);
    const [latest] = await server.store.listActions({ limit: 1 });
    expect(latest?.action).toMatchObject({ kind: 'wake', text: 'deploy 1.2 to production' });
  });

  it('/wake reads no query: a repeated name there is taken', async () => {
    const answer = await send('wake?attempt=1&attempt=2');
    expect(answer.status).toBe(200);
  });
});

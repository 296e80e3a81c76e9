/**
 * End-to-end: how signed routes sit beside token routes over real HTTP.
 * `requireToken` needs the signature and the token; /wake, /agent and
 * mappings without `auth` keep the hook token; a catch-all mapping never
 * serves a signed path; and the media types each route takes (415 otherwise).
 */
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import { sendRaw, storedActions, UNAUTHORIZED_BODY } from './helpers/signed-http.ts';

const SECRET = 'route-secret-1f2e3d4c5b6a7988';
const BEARER = { authorization: `Bearer ${TOKEN}` };
const JSON_TYPE = { 'content-type': 'application/json' };

const push = JSON.stringify({ ref: 'refs/heads/main', repository: { full_name: 'octo/app' } });

async function signed(body: string, event = 'push', secret = SECRET) {
  return {
    'x-github-event': event,
    'x-hub-signature-256': await sign(secret, body),
  };
}

describe('signed routes beside token routes', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        mappings: [
          {
            id: 'deploys',
            match: { path: 'deploys' },
            auth: { scheme: 'github', secret: SECRET, requireToken: true },
            templates: { message: 'deploy {{ref}}' },
          },
          {
            id: 'signed-push',
            match: { path: 'signed', when: { '==': [{ var: 'headers.x-github-event' }, 'push'] } },
            auth: { scheme: 'github', secret: SECRET },
            templates: { message: 'push {{ref}}' },
          },
          {
            id: 'ci',
            match: { path: 'ci', source: 'ci' },
            templates: { message: 'ci {{status}}' },
          },
          {
            id: 'split-push',
            match: { path: 'split', when: { '==': [{ var: 'headers.x-github-event' }, 'push'] } },
            templates: { message: 'split push {{ref}}' },
          },
          {
            id: 'split-rest',
            match: { path: 'split' },
            auth: { scheme: 'github', secret: SECRET },
            action: 'ignore',
          },
          { id: 'everything', match: {}, action: 'wake', templates: { text: 'caught {{hook}}' } },
        ],
      },
    });
  });
  afterAll(() => server.stop());

  const post = (path: string, body: string, headers: Record<string, string>) =>
    sendRaw(server, path, body, { ...JSON_TYPE, ...headers });

  describe('requireToken', () => {
    it('accepts a delivery carrying both the signature and the hook token', async () => {
      const res = await post('deploys', push, { ...(await signed(push)), ...BEARER });
      expect(res.status).toBe(200);
      const [action] = await storedActions(server);
      expect(action).toMatchObject({ mappingId: 'deploys', verification: { scheme: 'github' } });
    });

    it.each([
      ['the signature alone', async () => signed(push)],
      ['the token alone', async () => BEARER],
      [
        'a wrong token with a good signature',
        async () => ({ ...(await signed(push)), authorization: 'Bearer wrong-token-0123456789' }),
      ],
      [
        'a good token with a wrong signature',
        async () => ({ ...(await signed(push, 'push', 'wrong')), ...BEARER }),
      ],
    ])('refuses %s with the generic 401', async (_, headers) => {
      const before = (await storedActions(server)).length;
      const res = await post('deploys', push, await headers());
      expect(res.status).toBe(401);
      expect(res.body).toEqual(UNAUTHORIZED_BODY);
      expect(await storedActions(server)).toHaveLength(before);
    });
  });

  describe('token routes are unchanged', () => {
    it.each([
      ['wake', { text: 'hello' }],
      ['agent', { message: 'hello' }],
    ])(
      '/%s accepts the hook token and refuses a GitHub signature in its place',
      async (path, payload) => {
        const body = JSON.stringify(payload);
        expect((await post(path, body, BEARER)).status).toBe(200);
        const res = await post(path, body, await signed(body));
        expect(res.status).toBe(401);
        expect(res.body).toEqual(UNAUTHORIZED_BODY);
      },
    );

    it('a mapping without auth takes the token and stores verification scheme token', async () => {
      const res = await post('ci', JSON.stringify({ source: 'ci', status: 'green' }), BEARER);
      expect(res.status).toBe(200);
      const [action] = await storedActions(server);
      expect(action).toMatchObject({ mappingId: 'ci', verification: { scheme: 'token' } });
      const unsigned = await post('ci', JSON.stringify({ source: 'ci', status: 'red' }), {});
      expect(unsigned.status).toBe(401);
    });

    it('a token path falls through to the catch-all mapping', async () => {
      const res = await post('ci', JSON.stringify({ source: 'other' }), BEARER);
      expect(res.status).toBe(200);
      const [action] = await storedActions(server);
      expect(action).toMatchObject({ kind: 'wake', mappingId: 'everything' });
    });
  });

  describe('a catch-all mapping does not serve a signed path', () => {
    it('a verified delivery no own mapping takes is 204, not the catch-all', async () => {
      const before = (await storedActions(server)).length;
      const body = JSON.stringify({ action: 'opened' });
      const res = await post('signed', body, await signed(body, 'issues'));
      expect(res.status).toBe(204);
      expect(await storedActions(server)).toHaveLength(before);
    });

    it('the hook token alone cannot reach the signed path through the catch-all', async () => {
      const before = (await storedActions(server)).length;
      const res = await post('signed', push, { ...BEARER, 'x-github-event': 'push' });
      expect(res.status).toBe(401);
      expect(await storedActions(server)).toHaveLength(before);
    });

    it('the signed path still runs its own mapping', async () => {
      const res = await post('signed', push, await signed(push));
      expect(res.status).toBe(200);
      const [action] = await storedActions(server);
      expect(action).toMatchObject({ mappingId: 'signed-push' });
    });
  });

  describe('one auth per path, declared on any of its mappings', () => {
    it('a mapping without auth on a signed path runs under the signature', async () => {
      const res = await post('split', push, await signed(push));
      expect(res.status).toBe(200);
      const [action] = await storedActions(server);
      expect(action).toMatchObject({ mappingId: 'split-push', verification: { scheme: 'github' } });
    });

    it('the hook token alone is refused on that path', async () => {
      const res = await post('split', push, { ...BEARER, 'x-github-event': 'push' });
      expect(res.status).toBe(401);
    });
  });

  describe('media types', () => {
    const form = 'application/x-www-form-urlencoded';
    const multipart = 'multipart/form-data; boundary=----x';
    const multipartBody =
      '------x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n------x--\r\n';

    it.each([
      ['text/html', '<p>hi</p>'],
      [multipart, multipartBody],
    ])('refuses %s on a signed route with a valid signature: 415', async (type, body) => {
      const res = await post('signed', body, { ...(await signed(body)), 'content-type': type });
      expect(res.status).toBe(415);
      expect(res.body.error?.code).toBe('unsupported_media_type');
    });

    it.each([
      ['wake', 'text=hello', form],
      ['agent', 'message=hello', form],
      ['wake', '<p>hi</p>', 'text/html'],
      ['agent', multipartBody, multipart],
    ])('refuses on /%s the body %j of type %s: 415', async (path, body, type) => {
      const before = (await storedActions(server)).length;
      const res = await post(path, body, { ...BEARER, 'content-type': type });
      expect(res.status).toBe(415);
      expect(res.body).toMatchObject({
        ok: false,
        error: {
          code: 'unsupported_media_type',
          details: { accepted: expect.not.arrayContaining([form]) },
        },
      });
      expect(await storedActions(server)).toHaveLength(before);
    });

    it('takes text/plain as JSON on a signed route (what fetch labels a string body)', async () => {
      const res = await post('signed', push, {
        ...(await signed(push)),
        'content-type': 'text/plain;charset=UTF-8',
      });
      expect(res.status).toBe(200);
    });
  });
});

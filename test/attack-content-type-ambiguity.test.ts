/**
 * Attack: a Content-Type that two readers read differently. Node keeps the first of repeated
 * Content-Type lines and WHATWG's MIMEType the first of repeated parameters (dropping one it
 * cannot read, `charset =latin1`); a proxy or filter in front may keep the last or read more
 * leniently. A body it screened as JSON was parsed here as a form, or one it decodes as Latin-1
 * was taken here as UTF-8. Each is refused 415 `unsupported_media_type`, nothing stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import { rawPost } from './helpers/raw-http.ts';

const FORM = 'application/x-www-form-urlencoded';

describe('a Content-Type read one way here and another way in front', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        mappings: [
          { match: { path: 'note' }, action: 'wake', templates: { text: 'note {{payload.text}}' } },
          {
            match: { path: 'signed' },
            action: 'wake',
            templates: { text: 'signed {{payload.text}}' },
            auth: { scheme: 'hmac', secret: 'signing-secret-0123456789', header: 'x-signature' },
          },
        ],
      },
    });
  });
  afterAll(async () => {
    await server.stop();
  });

  const stored = async () => (await server.store.listActions({ limit: 1000 })).length;
  const send = (name: string, contentType: string | string[], body: string, token = true) =>
    rawPost(`${server.url}/hooks/${name}`, {
      headers: {
        'content-type': contentType,
        'content-length': Buffer.byteLength(body),
        ...(token && { authorization: `Bearer ${TOKEN}` }),
      },
      chunks: [body],
    });
  const code = (body: string) => (JSON.parse(body) as { error?: { code: string } }).error?.code;

  it.each([
    ['JSON, then a form, on a mapped route', 'note', ['application/json', FORM], 'text=form'],
    ['a form, then JSON, on a mapped route', 'note', [FORM, 'application/json'], '{"text":"j"}'],
    ['JSON twice, on /wake', 'wake', ['application/json', 'application/json'], '{"text":"j"}'],
  ])(
    'a repeated Content-Type header (%s) is refused 415, nothing stored',
    async (_, name, types, body) => {
      const before = await stored();
      const answer = await send(name, types, body);
      expect(answer.status).toBe(415);
      expect(code(answer.body)).toBe('unsupported_media_type');
      expect(await stored()).toBe(before);
    },
  );

  it.each([
    ['utf-8, then latin1', 'application/json; charset=utf-8; charset=latin1'],
    ['twice in different letter case', 'application/json; CHARSET=utf-8;charset=utf-8'],
    [
      'latin1 written with a space before "=" (the parser drops it)',
      'application/json; charset =latin1',
    ],
    ['without a value', 'application/json; charset='],
  ])('a charset parameter %s is refused 415, nothing stored', async (_, contentType) => {
    const before = await stored();
    const answer = await send('wake', contentType, '{"text":"caf\u00e9"}');
    expect(answer.status).toBe(415);
    expect(code(answer.body)).toBe('unsupported_media_type');
    expect(await stored()).toBe(before);
  });

  it('a quoted parameter value that spells a charset is no second charset: accepted', async () => {
    const answer = await send(
      'wake',
      'application/json; charset=utf-8; note="a;charset=latin1"',
      '{"text":"quoted"}',
    );
    expect(answer.status).toBe(200);
  });

  it('on a signed route an unsigned caller still gets only the 401, whatever its Content-Type', async () => {
    const answer = await send('signed', ['application/json', FORM], '{"text":"x"}', false);
    expect(answer.status).toBe(401);
    expect(code(answer.body)).toBe('unauthorized');
  });
});

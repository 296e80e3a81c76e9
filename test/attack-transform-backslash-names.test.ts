/**
 * Attack on a transform's JSON parser (the transform process's isolate has Node 24's JSON.parse
 * defect: after a key holding a backslash, a later escaped key at that place comes back as the
 * earlier one). Query and form field names reach the transform's input beside the payload, and
 * one isolate serves every sender: a name holding a backslash is refused (400 invalid_payload)
 * before the call, and a later request's escaped payload key reaches the transform as written.
 */
import { describe, expect, it } from 'vitest';
import { TOKEN } from './helpers/hookgate.ts';
import { transformServerFor } from './helpers/transform-server.ts';

describe('field names holding a backslash, on their way to a transform', () => {
  const server = transformServerFor(
    {
      keys: 'export default ({ payload }) => ({ message: JSON.stringify(Object.keys(payload)) });',
    },
    {},
  );

  const post = (query: string, body: string, type = 'application/json') =>
    fetch(`${server().url}/hooks/keys${query}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': type },
      body,
    });

  it('a query name holding one is refused; a later escaped key reaches the transform as written', async () => {
    const refused = await post('?qn=1&%5C=1', '{"qn":1}');
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe(
      'invalid_payload',
    );
    const later = await post('', '{"qn":1,"\\n":1}');
    expect(later.status).toBe(200);
    const [newest] = await server().store.listActions({ limit: 1 });
    expect(newest?.action).toMatchObject({ message: JSON.stringify(['qn', '\n']) });
  });

  it('a form field name holding one is refused', async () => {
    const res = await post('', 'fn=1&%5C=2', 'application/x-www-form-urlencoded');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_payload');
  });
});

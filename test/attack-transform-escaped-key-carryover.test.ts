/**
 * Attack: one sender's payload value renames another sender's keys in a transform's input.
 * V8's JSON.parse (Node 24) reuses keys it parsed before, comparing written characters (README,
 * Decisions). A transform that parses JSON a payload carries in a value (a Slack-style
 * `payload` string, allowed: values may hold backslashes) taught its context's parser an escaped
 * key, and the process then parsed each later input with that same parser: a later sender's key
 * `\u0001b` reached the transform as `\u`. The input now goes into the isolate as a copy of the
 * value, never through the context's JSON.parse.
 */
import { describe, expect, it } from 'vitest';
import { transformServerFor } from './helpers/transform-server.ts';

const server = transformServerFor(
  {
    embedded: `export default ({ payload }) => {
  if (typeof payload.embedded === 'string') JSON.parse(payload.embedded);
  return { message: JSON.stringify(Object.keys(payload)) };
};`,
  },
  {},
);

async function keysSeen(payload: unknown): Promise<string | undefined> {
  const res = await server().post('embedded', payload);
  expect(res.status).toBe(200);
  const { runId } = (await res.json()) as { runId?: string };
  const row = (await server().store.listActions({ limit: 100 })).find((r) => r.action.id === runId);
  return (row?.action as { message?: string } | undefined)?.message;
}

describe('escaped keys after another sender embedded JSON', () => {
  it('a later payload key reads as sent', async () => {
    // Sender A: a value holding JSON with an escaped key, parsed by the transform itself.
    await keysSeen({ embedded: '{"y":1,"\\\\u":1}' });
    // Sender B: a key the server writes escaped (a control character).
    expect(await keysSeen({ y: 1, '\u0001b': 'b' })).toBe(JSON.stringify(['y', '\u0001b']));
  });
});

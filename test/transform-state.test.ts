/**
 * What the README says of state between calls: a module's top-level state lives on from one
 * call to the next, whoever sent the request, within one mapping's context.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentAction } from '../schemas/action.ts';
import { type TestServer, tempDir } from './helpers/hookgate.ts';
import { startWithTransforms } from './helpers/transform-server.ts';

const KEEPER = `let last = 'nobody';
export default ({ payload }) => {
  const seen = last;
  last = payload.sender;
  return { message: 'previous sender: ' + seen };
};`;

describe('state between transform calls', () => {
  const temp = tempDir();
  let server: TestServer;
  const messageOf = async (sender: string, hook = 'keeper'): Promise<string> => {
    const res = await server.post(hook, { sender });
    const { runId } = (await res.json()) as { runId: string };
    const rows = await server.store.listActions({ limit: 100 });
    const row = rows.find((candidate) => candidate.action.id === runId);
    return (row?.action as AgentAction | undefined)?.message ?? '';
  };

  beforeAll(async () => {
    server = await startWithTransforms(temp.dir, { keeper: KEEPER, other: KEEPER }, {});
  });
  afterAll(async () => {
    await server.stop();
    temp.cleanup();
  });

  it("a module's top-level state is seen by the next sender's call of the same mapping only", async () => {
    expect(await messageOf('alice')).toBe('previous sender: nobody');
    expect(await messageOf('bob')).toBe('previous sender: alice');
    expect(await messageOf('carol', 'other')).toBe('previous sender: nobody');
  });
});

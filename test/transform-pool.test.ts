/**
 * A pool of transform processes (hooks.transforms.processes): calls are
 * served by all of them, and one killed for a missed deadline is replaced
 * while the others keep answering.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hookgate } from '../engine/hookgate.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { NEVER_SETTLES, QUICK, startWithTransforms } from './helpers/transform-server.ts';

describe('transform process pool', () => {
  const temp = tempDir();
  let hookgate: Hookgate;
  const post = (hook: string) =>
    fetch(`${hookgate.url}/hooks/${hook}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: '{}',
    }).then(async (res) => ({
      status: res.status,
      body: (await res.json()) as Record<string, unknown>,
    }));

  beforeAll(async () => {
    hookgate = await startWithTransforms(
      temp.dir,
      { quick: QUICK, never: NEVER_SETTLES },
      { processes: 3, deadlineMs: 600 },
    );
  });
  afterAll(async () => {
    await hookgate.close();
    temp.cleanup();
  });

  it('serves calls from every process', async () => {
    const results = await Promise.all(Array.from({ length: 12 }, () => post('quick')));
    expect(results.every((r) => r.status === 200)).toBe(true);
  });

  it('replaces a process that missed its deadline while the others keep answering', async () => {
    const stuck = post('never');
    const meanwhile = await Promise.all(Array.from({ length: 4 }, () => post('quick')));
    expect(meanwhile.every((r) => r.status === 200)).toBe(true);
    const timedOut = await stuck;
    expect(timedOut.status).toBe(500);
    expect((timedOut.body['error'] as { code: string }).code).toBe('transform_timeout');
    const after = await Promise.all(Array.from({ length: 6 }, () => post('quick')));
    expect(after.every((r) => r.status === 200)).toBe(true);
  });
});

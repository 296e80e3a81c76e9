/**
 * Attack: a transform that leaves its isolate to be rebuilt after each of its calls (it keeps
 * more heap than recycleAboveHeapMb) in a module whose top-level code is slow, or that crashes
 * the process once it is loaded again. Its own calls were answered 200 at once and the rebuild
 * ran after, charged to whatever call came next: another mapping's call missed its deadline
 * (500 transform_timeout, its process killed for it). The rebuild is now part of the call that
 * made it due: that call misses its own deadline, and the next call starts on a fresh process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestServer, tempDir } from './helpers/hookgate.ts';
import { QUICK, startWithTransforms } from './helpers/transform-server.ts';

type Answer = { status: number; code: string | undefined };

async function post(server: TestServer, hook: string): Promise<Answer> {
  const res = await server.post(hook, {});
  const body = (await res.json().catch(() => ({}))) as { error?: { code?: string } };
  return { status: res.status, code: body.error?.code };
}

// Keeps 50 MB reachable after the call: above the default recycleAboveHeapMb, so a rebuild.
const LEAVES_HEAP = `globalThis.kept = 'x'.repeat(50 << 20); globalThis.kept.indexOf('y');`;

describe('a module that reloads slowly and makes every call rebuild the isolate', () => {
  const temp = tempDir();
  let server: TestServer;
  beforeAll(async () => {
    server = await startWithTransforms(
      temp.dir,
      {
        quick: QUICK,
        // Top-level work just under what a module's load may take (4 x cpuTimeoutMs), over the
        // deadline of one call.
        slow: `const until = Date.now() + 2200; while (Date.now() < until) {}
          export default () => { ${LEAVES_HEAP} return { message: 'slow' }; };`,
      },
      { cpuTimeoutMs: 600, deadlineMs: 2000 },
    );
  }, 60_000);
  afterAll(async () => {
    await server.stop();
    temp.cleanup();
  });

  it('the rebuild is charged to the call that made it due; another mapping behind it keeps its deadline', async () => {
    const hostile = post(server, 'slow');
    // Queued behind the hostile call in the one process.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const beside = await post(server, 'quick');
    expect(beside).toEqual({ status: 200, code: undefined });
    expect(await hostile).toEqual({ status: 500, code: 'transform_timeout' });
    expect(await post(server, 'quick')).toEqual({ status: 200, code: undefined });
  }, 60_000);
});

/**
 * Attack: a transform that leaves its isolate to be rebuilt after each of its calls (it keeps
 * more heap than recycleAboveHeapMb) in a module whose top-level code is slow, or that crashes
 * the process once it is loaded again. Its own calls were answered 200 at once and the rebuild
 * ran after, inside the deadline of whatever call came next: another mapping's call missed it
 * (500 transform_timeout, its process killed for it). The process now says when it rebuilds,
 * and the calls waiting meanwhile have not started: their deadlines wait; rebuilds for the heap
 * are spaced. A module whose load crashes (or hangs) every process, a bomb armed after boot,
 * had every new process die loading it, and every mapping's transforms fail with it for good:
 * a module a process died loading twice is now set aside, and the others run without it. A
 * module that only loads slowly is never set aside for another mapping's rebuilds.
 */
import { describe, expect, it } from 'vitest';
import {
  type Answer,
  postAnswer as post,
  QUICK,
  transformServerFor,
} from './helpers/transform-server.ts';

// Keeps 50 MB reachable after the call: above the default recycleAboveHeapMb, so a rebuild.
const LEAVES_HEAP = `globalThis.kept = 'x'.repeat(50 << 20); globalThis.kept.indexOf('y');`;

describe('a module that reloads slowly and makes every call rebuild the isolate', () => {
  const server = transformServerFor(
    {
      quick: QUICK,
      // Top-level work within what a module's load may take, over the deadline of one call.
      slow: `const until = Date.now() + 2200; while (Date.now() < until) {}
        export default () => { ${LEAVES_HEAP} return { message: 'slow' }; };`,
    },
    // Room to fill 50 MB on a loaded machine; its top level (2.2 s) within 4 x cpuTimeoutMs.
    { cpuTimeoutMs: 1000, deadlineMs: 2000 },
  );

  it('another mapping waiting behind the rebuild keeps its deadline', async () => {
    const hostile = post(server(), 'slow');
    // Queued behind the hostile call in the one process.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const beside = await post(server(), 'quick');
    expect(beside).toEqual({ status: 200, code: undefined });
    // Its own call is answered before the rebuild (200, or out of CPU time on a loaded machine).
    expect((await hostile).code).not.toBe('transform_failed');
    expect(await post(server(), 'quick')).toEqual({ status: 200, code: undefined });
    // The slow module loaded in its own time: it is never set aside for it.
    expect((await post(server(), 'slow')).code).not.toBe('transform_failed');
  }, 60_000);
});

describe('a module armed after boot to crash every process that loads it', () => {
  let armAt = 0;
  const server = transformServerFor(
    () => {
      // Armed once the server is up: boot loads it cleanly.
      armAt = Date.now() + 10_000;
      return {
        quick: QUICK,
        bomb: `if (Date.now() > ${armAt}) new Array(1e9).fill(0);
          export default () => ({ message: 'bomb' });`,
      };
    },
    // Every call is followed by a rebuild (as the heap threshold makes it for a module that
    // leaves a big heap), so the next load after the arming is a rebuild's.
    { recycleAfterCalls: 1 },
  );

  it('is set aside after two processes died loading it; the other mappings keep answering', async () => {
    expect(await post(server(), 'quick')).toEqual({ status: 200, code: undefined });
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, armAt - Date.now() + 100)));
    // Its call is answered, then the rebuild after it dies loading it.
    expect(await post(server(), 'bomb')).toEqual({ status: 200, code: undefined });
    expect(await post(server(), 'quick')).toEqual({ status: 200, code: undefined });
    expect(await post(server(), 'quick')).toEqual({ status: 200, code: undefined });
    const aside = await server().post('bomb', {});
    expect(aside.status).toBe(500);
    const body = (await aside.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('transform_failed');
    expect(body.error.message).toContain('set aside');
  }, 90_000);
});

describe('rebuilds a module did not cause', () => {
  const server = transformServerFor(
    {
      quick: QUICK,
      heavy: `export default () => { ${LEAVES_HEAP} return { message: 'heavy' }; };`,
      // Loads in 1.8 s: within its own load limit (4 x cpuTimeoutMs), over one call's deadline
      // (which leaves an ordinary call room on a loaded machine).
      victim: `const until = Date.now() + 1800; while (Date.now() < until) {}
        export default () => ({ message: 'victim' });`,
    },
    // A second of CPU for the 50 MB fill on a loaded machine; the victim's load (1.8 s) within
    // 4 x cpuTimeoutMs and over the deadline.
    { cpuTimeoutMs: 1000, deadlineMs: 1500, recycleAfterCalls: 2 },
  );

  it("another mapping's rebuilds and plain recycling never fail a call nor set a slow-loading module aside", async () => {
    // The heavy calls' own outcome is theirs; the others' is what this is about.
    const innocent: Array<[string, Answer]> = [];
    for (let i = 0; i < 4; i++) {
      if (i % 2 === 0) await post(server(), 'heavy');
      else innocent.push(['quick', await post(server(), 'quick')]);
      innocent.push(['victim', await post(server(), 'victim')]);
    }
    expect(innocent.filter(([, answer]) => answer.status !== 200)).toEqual([]);
  }, 90_000);
});

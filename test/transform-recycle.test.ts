/**
 * The transform isolate is recycled after N calls (a fresh isolate, the same
 * modules): calls keep working and module state starts over.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { type Hookgate, startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import type { AgentAction } from '../schemas/action.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';

describe('isolate recycling', () => {
  const temp = tempDir();
  let hookgate: Hookgate;
  beforeAll(async () => {
    const root = path.join(temp.dir, 'hooks', 'transforms');
    mkdirSync(root, { recursive: true });
    // Module state lives in the isolate: it restarts when the isolate is rebuilt.
    // Busy for a few milliseconds, so concurrent calls queue up inside the isolate.
    writeFileSync(
      path.join(root, 'slow.js'),
      'export default () => { const end = Date.now() + 5; while (Date.now() < end) {} return { message: "slow" }; };\n',
    );
    writeFileSync(
      path.join(root, 'count.js'),
      'let calls = 0;\nexport default () => ({ message: `call ${++calls}` });\n',
    );
    const raw = {
      server: { host: '127.0.0.1', port: 0 },
      hooks: {
        enabled: true,
        token: TOKEN,
        // The longest deadline: the test is about calls surviving rebuilds, and on a loaded
        // machine 40 calls with a rebuild every third can outlast the 2 s default in the queue.
        transforms: { recycleAfterCalls: 3, deadlineMs: 5000 },
        mappings: [
          { id: 'count', match: { path: 'count' }, transform: { module: 'count.js' } },
          { id: 'slow', match: { path: 'slow' }, transform: { module: 'slow.js' } },
        ],
      },
    };
    const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
    hookgate = await startHookgate(loaded, { logger: createLogger('silent'), runtime: false });
  });
  afterAll(async () => {
    await hookgate.close();
    temp.cleanup();
  });

  it('rebuilds the isolate every recycleAfterCalls calls and keeps answering', async () => {
    const messages: string[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await fetch(`${hookgate.url}/hooks/count`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
        body: '{}',
      });
      expect(res.status).toBe(200);
      const { runId } = (await res.json()) as { runId: string };
      const rows = await hookgate.store.listActions({ limit: 20 });
      messages.push(
        (rows.find((row) => row.action.id === runId)?.action as AgentAction | undefined)?.message ??
          '',
      );
    }
    expect(messages).toEqual([
      'call 1',
      'call 2',
      'call 3',
      'call 1',
      'call 2',
      'call 3',
      'call 1',
    ]);
  });

  it('lets calls in flight finish before the isolate is rebuilt (no failures under concurrency)', async () => {
    const statuses = await Promise.all(
      Array.from({ length: 24 }, () =>
        fetch(`${hookgate.url}/hooks/slow`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}` },
          body: '{}',
        }).then((res) => res.status),
      ),
    );
    expect(statuses).toEqual(statuses.map(() => 200));
  });
});

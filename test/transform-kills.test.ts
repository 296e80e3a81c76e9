/**
 * What a transform process restart costs the calls that did not cause it:
 * calls of other mappings held by a process killed for a missed deadline are
 * sent again, uncharged, however many such kills there are; and a restarted
 * or recycled process runs each module's last good version, not a broken
 * edit on disk. One server, one process, short deadlines.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { type Hookgate, startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import type { AgentAction } from '../schemas/action.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { unwrap } from './helpers/wrapped.ts';

describe('transform process kills', () => {
  const temp = tempDir();
  const root = path.join(temp.dir, 'hooks', 'transforms');
  let hookgate: Hookgate;
  const post = (hook: string, payload: unknown = {}) =>
    fetch(`${hookgate.url}/hooks/${hook}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(payload),
    }).then(async (res) => {
      const body = (await res.json()) as { runId?: string; error?: { code: string } };
      return { status: res.status, code: body.error?.code, runId: body.runId };
    });
  const content = async (runId: string | undefined) => {
    const rows = await hookgate.store.listActions({ limit: 1000 });
    const action = rows.find((row) => row.action.id === runId)?.action as AgentAction;
    return unwrap(action.prompt as string).content;
  };

  beforeAll(async () => {
    mkdirSync(root, { recursive: true });
    // Payload-steered: {n: 1e9} allocates past what the isolate's own limits stop in time.
    writeFileSync(
      path.join(root, 'bomb.js'),
      'export default ({ payload }) => ({ message: Array(payload.n).fill("x").join("").slice(0, 10) });\n',
    );
    writeFileSync(path.join(root, 'good.js'), 'export default () => ({ message: "good" });\n');
    writeFileSync(path.join(root, 'edit.js'), 'export default () => ({ message: "version 1" });\n');
    const raw = {
      server: { host: '127.0.0.1', port: 0 },
      hooks: {
        enabled: true,
        token: TOKEN,
        transforms: { processes: 1, cpuTimeoutMs: 100, deadlineMs: 800, recycleAfterCalls: 3 },
        mappings: ['bomb', 'good', 'edit'].map((id) => ({
          id,
          match: { path: id },
          action: 'agent',
          transform: { module: `${id}.js` },
        })),
      },
    };
    const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
    hookgate = await startHookgate(loaded, { logger: createLogger('silent'), runtime: false });
  });
  afterAll(async () => {
    await hookgate.close();
    temp.cleanup();
  });

  it('another mapping’s poisoned calls killing the process twice: calls held behind them are sent again and all succeed', async () => {
    const bombs = [post('bomb', { n: 1e9 }), post('bomb', { n: 1e9 })];
    const good = Array.from({ length: 6 }, () => post('good'));
    const last = post('bomb', { n: 1e9 });
    const answers = await Promise.all(good);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    // The bombs fail (their own deadline, or purged as the same mapping's), nothing else.
    for (const bomb of await Promise.all([...bombs, last])) expect(bomb.status).toBe(500);
  });

  it('a broken edit, then process recycles and a restart: the last good version keeps answering', async () => {
    expect(await content((await post('edit')).runId)).toBe('version 1');
    writeFileSync(path.join(root, 'edit.js'), 'export default () => ({ message: "v2" }); broken(');
    // Each call after the edit still runs version 1; recycleAfterCalls: 3 rebuilds the isolate.
    for (let i = 0; i < 4; i++) {
      const answer = await post('edit');
      expect(answer.status).toBe(200);
      expect(await content(answer.runId)).toBe('version 1');
    }
    // Another mapping's missed deadline: the process is killed and a new one started.
    expect((await post('bomb', { n: 1e9 })).code).toBe('transform_timeout');
    const after = await post('edit');
    expect(after.status).toBe(200);
    expect(await content(after.runId)).toBe('version 1');
  });
});

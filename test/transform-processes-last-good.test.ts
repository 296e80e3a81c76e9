/**
 * Several transform processes and a broken edit: every process falls back to
 * the same last good version, the newest one any of them compiled, not each
 * to the one it compiled itself (two versions then answered in turn).
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

describe('transform processes after a broken edit', () => {
  const temp = tempDir();
  const root = path.join(temp.dir, 'hooks', 'transforms');
  const file = path.join(root, 'edit.js');
  let hookgate: Hookgate;

  /** What the agent is given for one call of the mapping (sequential calls go round the processes). */
  const answer = async (): Promise<string> => {
    const res = await fetch(`${hookgate.url}/hooks/edit`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: '{}',
    });
    const body = (await res.json()) as { runId?: string };
    expect(res.status).toBe(200);
    const rows = await hookgate.store.listActions({ limit: 1000 });
    const action = rows.find((row) => row.action.id === body.runId)?.action as AgentAction;
    return unwrap(action.prompt as string).content;
  };

  beforeAll(async () => {
    mkdirSync(root, { recursive: true });
    // Each process's isolate draws its own mark when it evaluates the module.
    writeFileSync(
      file,
      'const mark = Math.random().toString(36).slice(2);\nexport default () => ({ message: "version 1 " + mark });\n',
    );
    const raw = {
      server: { host: '127.0.0.1', port: 0 },
      hooks: {
        enabled: true,
        token: TOKEN,
        transforms: { processes: 2 },
        mappings: [
          {
            id: 'edit',
            match: { path: 'edit' },
            action: 'agent',
            transform: { module: 'edit.js' },
          },
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

  it('a good edit seen by one process, then a broken one: every process answers the good edit', async () => {
    const first: string[] = [];
    for (let i = 0; i < 4; i++) first.push(await answer());
    // Both processes answer (two marks): the calls below reach the one that missed the edit.
    expect(new Set(first).size).toBe(2);
    expect(first.every((text) => text.startsWith('version 1 '))).toBe(true);

    writeFileSync(file, 'export default () => ({ message: "version 2" });\n');
    // One call: one process compiles version 2, the other still holds version 1.
    expect(await answer()).toBe('version 2');

    writeFileSync(file, 'export default () => ({ message: "version 3" }); broken(\n');
    const after: string[] = [];
    for (let i = 0; i < 6; i++) after.push(await answer());
    expect(after).toEqual(Array(6).fill('version 2'));
  });
});

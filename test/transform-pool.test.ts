/**
 * A pool of transform processes (hooks.transforms.processes): calls are
 * served by all of them, and one killed for a missed deadline is replaced
 * while the others keep answering.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { type Hookgate, startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';

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
    const root = path.join(temp.dir, 'hooks', 'transforms');
    mkdirSync(root, { recursive: true });
    writeFileSync(path.join(root, 'quick.js'), 'export default () => ({ message: "quick" });\n');
    writeFileSync(path.join(root, 'never.js'), 'export default () => new Promise(() => {});\n');
    const raw = {
      server: { host: '127.0.0.1', port: 0 },
      hooks: {
        enabled: true,
        token: TOKEN,
        transforms: { processes: 3, deadlineMs: 600 },
        mappings: [
          { id: 'quick', match: { path: 'quick' }, transform: { module: 'quick.js' } },
          { id: 'never', match: { path: 'never' }, transform: { module: 'never.js' } },
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

/**
 * A flood of transform requests cannot pile up in the server: calls waiting
 * for a transform process are bounded (hooks.transforms.maxWaitingCalls),
 * and one past the bound is refused at once with 503 and Retry-After.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { type Hookgate, startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';

describe('transform call queue bound', () => {
  const temp = tempDir();
  let hookgate: Hookgate;
  const post = (hook: string) =>
    fetch(`${hookgate.url}/hooks/${hook}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: '{}',
    }).then(async (res) => ({
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: (await res.json()) as { error?: { code: string } },
    }));

  beforeAll(async () => {
    const root = path.join(temp.dir, 'hooks', 'transforms');
    mkdirSync(root, { recursive: true });
    writeFileSync(path.join(root, 'never.js'), 'export default () => new Promise(() => {});\n');
    const raw = {
      server: { host: '127.0.0.1', port: 0 },
      hooks: {
        enabled: true,
        token: TOKEN,
        transforms: { processes: 1, deadlineMs: 5000, maxWaitingCalls: 2 },
        mappings: [{ id: 'never', match: { path: 'never' }, transform: { module: 'never.js' } }],
      },
    };
    const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
    hookgate = await startHookgate(loaded, { logger: createLogger('silent'), runtime: false });
  });
  afterAll(async () => {
    await hookgate.close();
    temp.cleanup();
  });

  it('a flood of transform requests past the waiting bound is refused with 503, not queued without bound', async () => {
    // One process holds 32 calls; 2 more may wait; the rest are refused at once.
    const flood = Array.from({ length: 40 }, () => post('never').catch(() => undefined));
    const refused = await new Promise<Array<Awaited<ReturnType<typeof post>>>>((resolve) => {
      const seen: Array<Awaited<ReturnType<typeof post>>> = [];
      for (const request of flood)
        void request.then((result) => {
          if (result?.status === 503) seen.push(result);
          if (seen.length === 6) resolve(seen);
        });
    });
    expect(refused).toHaveLength(6);
    for (const result of refused) {
      expect(result.body.error?.code).toBe('unavailable');
      expect(result.retryAfter).toBe('1');
    }
  });
});

describe('transform call bytes bound', () => {
  const temp = tempDir();
  let hookgate: Hookgate;
  // ~200 KB of `{}`: the shape that parses to the most objects per byte.
  const body = JSON.stringify({ a: Array(66_000).fill({}) });
  const post = () =>
    fetch(`${hookgate.url}/hooks/never`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body,
    }).then(async (res) => ({
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: (await res.json()) as { error?: { code: string } },
    }));

  beforeAll(async () => {
    const root = path.join(temp.dir, 'hooks', 'transforms');
    mkdirSync(root, { recursive: true });
    writeFileSync(path.join(root, 'never.js'), 'export default () => new Promise(() => {});\n');
    const raw = {
      server: { host: '127.0.0.1', port: 0 },
      hooks: {
        enabled: true,
        token: TOKEN,
        transforms: {
          processes: 1,
          cpuTimeoutMs: 5000,
          deadlineMs: 5000,
          maxWaitingBytes: 1_048_576,
        },
        mappings: [{ id: 'never', match: { path: 'never' }, transform: { module: 'never.js' } }],
      },
    };
    const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
    hookgate = await startHookgate(loaded, { logger: createLogger('silent'), runtime: false });
  });
  afterAll(async () => {
    await hookgate.close();
    temp.cleanup();
  });

  it('a flood of large-bodied transform requests is refused with 503 past maxWaitingBytes, far below maxWaitingCalls', async () => {
    // 1 MiB holds five 200 KB inputs (six or more get through only as earlier ones end); the
    // count bound alone (256 waiting + 32 sent) would hold all 12.
    const flood = Array.from({ length: 12 }, () => post().catch(() => undefined));
    const refused = await new Promise<Array<Awaited<ReturnType<typeof post>>>>((resolve) => {
      const seen: Array<Awaited<ReturnType<typeof post>>> = [];
      for (const request of flood)
        void request.then((result) => {
          if (result?.status === 503) seen.push(result);
          if (seen.length === 5) resolve(seen);
        });
    });
    for (const result of refused) {
      expect(result.body.error?.code).toBe('unavailable');
      expect(result.retryAfter).toBe('1');
    }
  });
});

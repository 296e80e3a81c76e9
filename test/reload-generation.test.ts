/**
 * A generation's lifetime: a request keeps the generation it started on,
 * and a retired generation closes its transform processes only after its
 * last request is answered. Which settings a reload cannot apply.
 */
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { compileConfig } from '../engine/config/compile.ts';
import type { Ledger } from '../engine/dispatcher.ts';
import { createLogger } from '../engine/log.ts';
import { createMemoryLimiter } from '../engine/rate-limit.ts';
import { startGeneration } from '../engine/reload/generation.ts';
import { createLiveConfig } from '../engine/reload/live-config.ts';
import { restartOnlyChanges } from '../engine/reload/restart-only.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';

const NO_LEDGER: Ledger = {
  hold: () => Promise.resolve({ previous: undefined, release: () => undefined }),
  commit: () => Promise.resolve({ body: '{}' }),
};

function load(extra: Record<string, unknown> = {}) {
  const temp = tempDir('hookgate-generation-');
  return {
    loaded: resolveConfig(
      { hooks: { enabled: true, token: TOKEN }, ...extra },
      { baseDir: temp.dir, dataDir: temp.dir, env: {} },
    ),
    cleanup: temp.cleanup,
  };
}

describe('a generation', () => {
  it('retires only once the requests it holds are answered', async () => {
    const { loaded, cleanup } = load();
    const generation = await startGeneration(compileConfig(loaded), {
      logger: createLogger('silent'),
      ledger: NO_LEDGER,
      limiter: createMemoryLimiter(loaded.config.hooks.authRateLimit),
      resolveClient: () => '127.0.0.1',
      lastChannel: () => undefined,
      requestTimeoutMs: 30_000,
    });
    const first = generation.acquire();
    const second = generation.acquire();
    let retired = false;
    const retiring = generation.retire().then(() => {
      retired = true;
    });
    first.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(retired).toBe(false);
    second.release();
    await retiring;
    expect(retired).toBe(true);
    cleanup();
  });
});

describe('restart-only settings', () => {
  it('names the sections a reload cannot apply, and nothing else', () => {
    const a = load();
    const b = load({
      server: { port: 9999 },
      runtime: { concurrency: 2 },
      hooks: { enabled: true, token: `${TOKEN}x`, maxBodyBytes: 1024 },
      agents: { list: [{ id: 'other' }] },
    });
    expect(restartOnlyChanges(a.loaded.config, b.loaded.config)).toEqual([
      'server',
      'runtime.concurrency',
    ]);
    expect(restartOnlyChanges(a.loaded.config, a.loaded.config)).toEqual([]);
    a.cleanup();
    b.cleanup();
  });

  it('leaves out the mail settings the gmail preset applies at once, not the flow\'s own', () => {
    const gmail = (settings: Record<string, unknown>) =>
      load({ hooks: { enabled: true, token: TOKEN, presets: ['gmail'], gmail: settings } });
    const a = gmail({ allowUnsafeExternalContent: false });
    const b = gmail({ allowUnsafeExternalContent: true, model: 'openai/gpt-4o', thinking: 'low' });
    const c = gmail({ allowUnsafeExternalContent: false, label: 'Receipts' });
    expect(restartOnlyChanges(a.loaded.config, b.loaded.config)).toEqual([]);
    expect(restartOnlyChanges(a.loaded.config, c.loaded.config)).toEqual(['hooks.gmail']);
    for (const one of [a, b, c]) one.cleanup();
  });
});

describe('a burst of reloads', () => {
  it('joins the reload that is waiting instead of queueing one per signal', async () => {
    const { loaded, cleanup } = load();
    const deps = {
      logger: createLogger('silent'),
      ledger: NO_LEDGER,
      limiter: createMemoryLimiter(loaded.config.hooks.authRateLimit),
      resolveClient: () => '127.0.0.1',
      lastChannel: () => undefined,
      requestTimeoutMs: 30_000,
    };
    const fromFile = { ...loaded, file: '/tmp/hookgate.yaml' };
    const first = await startGeneration(compileConfig(fromFile), deps);
    let started = 0;
    const live = createLiveConfig(first, {
      load: () => fromFile,
      start: (compiled) => {
        started++;
        return startGeneration(compiled, deps);
      },
      swapped: () => undefined,
      logger: createLogger('silent'),
    });
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => live.reload('SIGHUP')));
    expect(outcomes.every((o) => o.ok)).toBe(true);
    // One in progress and at most one waiting: never one per signal.
    expect(started).toBeGreaterThanOrEqual(1);
    expect(started).toBeLessThanOrEqual(2);
    await live.close();
    cleanup();
  });
});

/**
 * A reload of a config file that is slow to parse: a YAML mapping of many thousand keys
 * (its duplicate-key check is quadratic; 256 KiB of them took 14 s), a large file, or no
 * file at all but a FIFO. The reload parsed on the main thread, so every request waited for
 * it (or, with a FIFO, for ever). The file is now read in a worker under a deadline and a
 * heap limit: requests are answered meanwhile, and the reload fails and changes nothing.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { loadConfigFile } from '../engine/config.ts';
import { MAX_CONFIG_BYTES, readConfigTextAsync } from '../engine/config-document.ts';
import { startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { ciWakeConfig } from './helpers/reload-config.ts';

const CONFIG = ciWakeConfig('build {{payload.build}}');

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start() {
  const temp = tempDir('hookgate-slow-config-');
  cleanups.push(temp.cleanup);
  const file = path.join(temp.dir, 'hookgate.yaml');
  writeFileSync(file, CONFIG);
  const hookgate = await startHookgate(loadConfigFile(file, {}), {
    logger: createLogger('silent'),
    runtime: false,
    env: {},
  });
  cleanups.push(() => hookgate.close());
  const post = (build: string) =>
    fetch(`${hookgate.url}/hooks/ci`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ build }),
    });
  return { file, hookgate, post };
}

it('a request is answered while a reload parses a slow file, and the reload changes nothing', async () => {
  const s = await start();
  const keys = Array.from({ length: 20_000 }, (_, i) => `k${i}: 1`).join(', ');
  writeFileSync(s.file, `${CONFIG}extra: { ${keys} }\n`);
  const reloading = s.hookgate.reload('test').then((outcome) => ({ what: 'reload', outcome }));
  const answering = s.post('1').then((answer) => ({ what: 'answer', status: answer.status }));
  // Which settles first, not how long either takes: the parse must not hold the request.
  const first = await Promise.race([reloading, answering]);
  expect(first).toEqual({ what: 'answer', status: 200 });
  const { outcome } = await reloading;
  expect(outcome.ok).toBe(false);
  expect((await s.post('2')).status).toBe(200);
  // The file fixed: the next reload applies it.
  writeFileSync(s.file, CONFIG.replace('build {{', 'fixed {{'));
  expect((await s.hookgate.reload('test')).ok).toBe(true);
}, 60_000);

it('a config path that is a FIFO is refused without a read, and changes nothing', async () => {
  const s = await start();
  rmSync(s.file);
  execFileSync('mkfifo', [s.file]);
  const outcome = await s.hookgate.reload('test');
  expect(outcome.ok).toBe(false);
  expect(outcome.error).toContain('not a regular file');
  expect((await s.post('3')).status).toBe(200);
});

// A regular file that reports no size and holds more than the bound (procfs): what a file that
// grows after the size check looks like to the reader.
const SIZELESS = '/proc/kallsyms';
const sizeless = (() => {
  try {
    return statSync(SIZELESS).size === 0 && readFileSync(SIZELESS).length > MAX_CONFIG_BYTES;
  } catch {
    return false;
  }
})();

it.skipIf(!sizeless)(
  'a reload of a file larger than it says is read no further than the bound',
  async () => {
    await expect(readConfigTextAsync(SIZELESS)).rejects.toThrow(`more than ${MAX_CONFIG_BYTES}`);
  },
);

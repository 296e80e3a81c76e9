/**
 * A reload parses the config file in a worker "so requests are answered meanwhile", and the
 * yaml library refuses a billion-laughs document past 100 uses of an anchor. But an alias is
 * parsed as a shared reference, not a copy: the document the worker sends back is small, and it
 * is expanded on the main thread, where `${VAR}` substitution walks every path of it, each
 * alias again, building a new copy of each (config.ts substituteEnv, before validation). One
 * anchored list of 200,000 ones, used 99 times (400 KB, inside every library limit), is 20
 * million values walked and copied on the main thread: the reload that then fails with
 * "unknown setting" held every request for seconds and took the process's memory up by
 * hundreds of MB, for a file the worker had already read. Now the walk stops once aliases
 * have repeated 100,000 values and the reload is refused saying so.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { loadConfigFile } from '../engine/config.ts';
import { startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { ciWakeConfig } from './helpers/reload-config.ts';

const CONFIG = ciWakeConfig('build {{payload.build}}');

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('a reload of a file of aliases is refused for the values they expand to, the old config kept', async () => {
  const temp = tempDir('hookgate-alias-expansion-');
  cleanups.push(temp.cleanup);
  const file = path.join(temp.dir, 'hookgate.yaml');
  writeFileSync(file, CONFIG);
  const hookgate = await startHookgate(loadConfigFile(file, {}), {
    logger: createLogger('silent'),
    runtime: false,
    env: {},
  });
  cleanups.push(() => hookgate.close());
  const post = () =>
    fetch(`${hookgate.url}/hooks/ci`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ build: 'x' }),
    });
  expect((await post()).status).toBe(200);

  // A tenth of the attack's list (2 million values once expanded, still 20 times the bound):
  // the worker's parse of the whole one could pass its 10 s read limit on a loaded machine.
  const ones = Array(20_000).fill('1').join(',');
  const uses = Array(99).fill('*ones').join(',');
  writeFileSync(file, `${CONFIG}extra:\n  list: &ones [${ones}]\n  uses: [${uses}]\n`);
  let reloading = true;
  const reload = hookgate.reload('test').finally(() => {
    reloading = false;
  });
  // Requests go on being answered while it runs.
  while (reloading) expect((await post()).status).toBe(200);
  const outcome = await reload;
  // Refused for its size once expanded, before the walk reached 20 million values.
  expect(outcome.error).toContain('YAML aliases in the document repeat more than 100000 values');
  expect((await post()).status).toBe(200);
}, 60_000);

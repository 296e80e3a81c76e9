/**
 * A config that must be refused, the three ways hookgate loads one: resolved (the ConfigError),
 * by `check` and `serve` from a file (exit 2 naming the setting), and by a reload (refused, the
 * running config keeps serving). Each asserts that the refused value's marker text never shows.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { ConfigError, loadConfigFile, resolveConfig } from '../../engine/config.ts';
import { startHookgate } from '../../engine/hookgate.ts';
import { createLogger } from '../../engine/log.ts';
import { TOKEN, tempDir } from './hookgate.ts';
import { runHookgate } from './process.ts';

type ResolveBase = { baseDir: string; dataDir: string };

/** The ConfigError `raw` is refused with; throws when it loads. */
export function configRefusal(
  raw: Record<string, unknown>,
  base: ResolveBase,
  env: Record<string, string> = {},
): ConfigError {
  try {
    resolveConfig(raw, { ...base, env });
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('config was accepted');
}

/** `check` and `serve` with `file` both exit 2 naming `setting`, never showing `secret`. */
export async function expectCheckAndServeRefuse(
  dir: string,
  file: string,
  expected: { setting: string; secret: string; env?: Record<string, string> },
): Promise<void> {
  for (const args of [
    ['check', '--config', file],
    ['--config', file],
  ]) {
    const result = await runHookgate(args, {
      cwd: dir,
      ...(expected.env && { env: expected.env }),
    });
    expect(result.code, args[0]).toBe(2);
    expect(result.stderr, args[0]).toContain(`${expected.setting}:`);
    expect(`${result.stdout}\n${result.stderr}`, args[0]).not.toContain(expected.secret);
  }
}

/**
 * A server started from `text(TOKEN, good)` is reloaded with `text(new token, bad)`: the reload
 * is refused naming `setting` without `secret`, and the hooks still take the old token only.
 */
export async function expectReloadRefused(
  cleanups: Array<() => unknown>,
  case_: {
    fileName: string;
    text: (token: string, value: string) => string;
    good: string;
    bad: string;
    setting: string;
    secret: string;
  },
): Promise<void> {
  const temp = tempDir('hookgate-refused-reload-');
  cleanups.push(temp.cleanup);
  const file = path.join(temp.dir, case_.fileName);
  writeFileSync(file, case_.text(TOKEN, case_.good));
  const hookgate = await startHookgate(loadConfigFile(file, {}), {
    logger: createLogger('silent'),
    runtime: false,
    env: {},
  });
  cleanups.push(() => hookgate.close());
  const NEW_TOKEN = 'new-hook-token-0123456789abcdef';
  writeFileSync(file, case_.text(NEW_TOKEN, case_.bad));
  const outcome = await hookgate.reload('test');
  expect(outcome.ok).toBe(false);
  expect(outcome.error).toContain(`${case_.setting}:`);
  expect(JSON.stringify(outcome)).not.toContain(case_.secret);
  const wake = (token: string) =>
    fetch(`${hookgate.url}/hooks/wake`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{"text":"x"}',
    });
  expect((await wake(TOKEN)).status).toBe(200);
  expect((await wake(NEW_TOKEN)).status).toBe(401);
}

/**
 * Transform references at boot: every problem stops the service with a
 * ConfigError naming the mapping and the module (and file:line for syntax).
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, resolveConfig } from '../engine/config.ts';
import { startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';

const temp = tempDir();
const root = path.join(temp.dir, 'hooks', 'transforms');
const files: Record<string, string> = {
  'good.js': 'export default () => ({ message: "ok" });',
  'ts-error.ts': 'const a: number = 1;\nexport default function (x: ) { return x; }\n',
  'ts-enum.ts': 'enum Colour { Red }\nexport default () => ({ message: String(Colour.Red) });\n',
  'js-error.js': 'export default () => {{ ;\n',
  'no-export.js': 'export const other = 1;',
  'not-function.js': 'export default 42;',
  'named-missing.js': 'export default () => ({});',
  'imports-node.js': "import fs from 'node:fs';\nexport default () => ({ message: typeof fs });",
  'imports-package.js': "import x from 'lodash';\nexport default () => ({});",
  'imports-outside.js': "import x from '../../outside/evil.js';\nexport default () => ({});",
  'imports-link-out.js': "import x from './link-out.js';\nexport default () => ({});",
  'top-level-throw.js': "throw new Error('boom');\nexport default () => ({});",
  'top-level-loop.js': 'for (;;) {}\nexport default () => ({});',
  'data.json': '{}',
  // Over the 2 MiB a module may have (a restart sends its text to the process in one frame).
  'huge.js': `export default () => ({ message: 'x' });\n/*${'x'.repeat(2 * 1024 * 1024)}*/\n`,
  'huge-parts.js': "import './part-a.js';\nimport './part-b.js';\nexport default () => ({});",
  'part-a.js': `/*${'a'.repeat(1024 * 1024 + 16)}*/\n`,
  'part-b.js': `/*${'b'.repeat(1024 * 1024 + 16)}*/\n`,
  'sub/ok.js': 'export default () => ({ message: "sub" });',
};
for (const [file, source] of Object.entries(files)) {
  mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  writeFileSync(path.join(root, file), source);
}
mkdirSync(path.join(temp.dir, 'outside'), { recursive: true });
writeFileSync(path.join(temp.dir, 'outside', 'evil.js'), 'export default 1;');
symlinkSync(path.join(temp.dir, 'outside', 'evil.js'), path.join(root, 'link-out.js'));
afterAll(() => temp.cleanup());

async function bootError(
  transform: Record<string, unknown>,
  hooks: Record<string, unknown> = {},
): Promise<string> {
  const raw = {
    server: { host: '127.0.0.1', port: 0 },
    hooks: {
      enabled: true,
      token: TOKEN,
      ...hooks,
      mappings: [{ id: 'tf', match: { path: 'tf' }, transform }],
    },
  };
  const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
  try {
    const hookgate = await startHookgate(loaded, {
      logger: createLogger('silent'),
      runtime: false,
    });
    await hookgate.close();
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  return 'started';
}

describe('transform modules at boot', () => {
  it('starts with a good module, and with transformsDir inside the root', async () => {
    expect(await bootError({ module: 'good.js' })).toBe('started');
    expect(await bootError({ module: 'ok.js' }, { transformsDir: 'sub' })).toBe('started');
  });

  it.each([
    ['a TypeScript syntax error, with file and line', 'ts-error.ts', /ts-error\.ts:2/],
    ['non-erasable TypeScript (enum)', 'ts-enum.ts', /ts-enum\.ts.*enum/],
    ['a JavaScript syntax error', 'js-error.js', /SyntaxError|Unexpected/],
    [
      'no default or transform export',
      'no-export.js',
      /neither a default function nor "transform"/,
    ],
    ['a default export that is not a function', 'not-function.js', /"default" is not a function/],
    ['an import of a node: module', 'imports-node.js', /import "node:fs" is not allowed/],
    ['an import of a package', 'imports-package.js', /import "lodash" is not allowed/],
    ['an import outside the root', 'imports-outside.js', /leaves the transforms root/],
    ['an import through a symlink leaving the root', 'imports-link-out.js', /symlink/],
    ['a throw at top level', 'top-level-throw.js', /boom/],
    ['an infinite loop at top level', 'top-level-loop.js', /timed out/i],
    ['a module that is not JS or TS', 'data.json', /must be a \.js/],
    ['a module file over 2 MiB', 'huge.js', /huge\.js" is larger than 2 MiB/],
    [
      'a module over 2 MiB with its imports',
      'huge-parts.js',
      /with its imports is larger than 2 MiB/,
    ],
    ['a missing module', 'missing.js', /not found/],
    ['a path escape', '../../etc/passwd.js', /contains "\.\."/],
    ['an absolute path', '/etc/passwd.js', /absolute/],
    ['a symlink leaving the root', 'link-out.js', /symlink/],
  ])('refuses %s, naming the mapping', async (_name, module, pattern) => {
    const message = await bootError({ module });
    expect(message).toContain('hooks.mappings.0.transform.module');
    expect(message).toContain('(mapping "tf")');
    expect(message).toMatch(pattern);
  });

  it('refuses a missing named export', async () => {
    expect(await bootError({ module: 'named-missing.js', export: 'digest' })).toMatch(
      /"digest" is not a function/,
    );
  });

  it.each([
    ['outside the root', '../elsewhere'],
    ['absolute', '/tmp'],
  ])('refuses hooks.transformsDir %s', async (_name, transformsDir) => {
    expect(await bootError({ module: 'good.js' }, { transformsDir })).toContain(
      'hooks.transformsDir',
    );
  });
});

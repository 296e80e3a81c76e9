/**
 * Config sources `serve` and `check` read as before the reload's stricter reader: a pipe
 * (`--config /dev/stdin`) and a process substitution (`<(sops -d ...)`); and a large config
 * with many values and no alias is not refused by the bound on what aliases repeat.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { tempDir } from './helpers/hookgate.ts';

const SERVER = path.join(import.meta.dirname, '..', 'server.ts');
const temps = [tempDir(), tempDir()];
afterAll(() => {
  for (const temp of temps) temp.cleanup();
});
const CONFIG = `runtime:\n  dataDir: ${temps[0]?.dir}\nhooks:\n  token: abcdefghijklmnopqrstuvwxyz012345\n`;

/** `hookgate check --config <file>` (the file from a shell, so /dev/stdin and <(...) work). */
function check(shell: string, stdin?: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      'bash',
      ['-c', shell],
      // The config in the shell's own environment: this process's is shared with later files.
      { env: { ...process.env, SERVER, CFG: CONFIG } },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    );
    child.stdin?.end(stdin ?? '');
  });
}

it.each([
  [
    'piped to --config /dev/stdin',
    `printf '%s' "$CFG" | "${process.execPath}" "$SERVER" check --config /dev/stdin`,
    undefined,
  ],
  [
    'a process substitution (sops -d, envsubst)',
    `"${process.execPath}" "$SERVER" check --config <(printf '%s' "$CFG")`,
    undefined,
  ],
])(
  'a config %s is read, as before',
  async (_what, shell, stdin) => {
    const result = await check(shell, stdin);
    expect(result).toMatchObject({ code: 0, out: expect.stringContaining('Config OK') });
  },
  30_000,
);

it('a 2 MB config with a 100,001-entry allowlist and no alias at all is not refused for aliases', async () => {
  const file = path.join(temps[1]?.dir as string, 'hookgate.yaml');
  const lines = [
    'channels:',
    '  telegram:',
    "    botToken: '123456:abc'",
    'hooks:',
    '  token: abcdefghijklmnopqrstuvwxyz012345',
    '  allowedRecipients:',
    '    telegram:',
    ...Array.from({ length: 100_001 }, (_, i) => `      - '${100_000_000 + i}'`),
  ];
  writeFileSync(file, `${lines.join('\n')}\n`);
  const result = await check(`"${process.execPath}" "$SERVER" check --config "${file}"`);
  expect(result.out).not.toContain('YAML aliases');
  expect(result.code).toBe(0);
}, 30_000);

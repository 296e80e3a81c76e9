/**
 * Attack (or a copy-paste): a PostgreSQL URL whose password holds an unencoded `/`, `?` or `#`
 * (base64-style passwords do). The URL parser then ends the authority early and reads the rest
 * of the password as the port, the path, the query or the fragment, and `check`, `serve`'s
 * listening line and the "cannot open the store" error printed it as the database's place (and
 * `serve` connected there, the driver's error naming it too). Such a URL is now a config error,
 * and never described.
 */
import { afterAll, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { describeUrl } from '../engine/store/backend.ts';
import { killAll, runHookgate, tempDir, writeConfig } from './helpers/process.ts';

afterAll(killAll);

const PASSWORDS = ['4711/Xk9+pQ2w/LmZ=', '4711?Xk9+pQ2w=', '4711#Xk9+pQ2w=', 'Xk9+pQ2w/LmZ='];

it.each(PASSWORDS)('an unencoded password %s is never described', (password) => {
  const described = describeUrl(`postgres://app:${password}@db.internal:5432/hookgate`);
  expect(described).not.toContain('Xk9');
  expect(described).not.toContain('4711');
});

it('an encoded password leaves host, port and database shown', () => {
  expect(describeUrl('postgres://app:Xk9%2BpQ2w%2FLmZ%3D@db.internal:5432/hookgate')).toBe(
    'postgres://db.internal:5432/hookgate',
  );
});

it('check refuses such a URL, naming the field, printing no part of the password', async () => {
  const { dir, cleanup } = tempDir('hookgate-store-url-');
  try {
    const file = writeConfig(
      dir,
      `server: { host: 127.0.0.1, port: 0 }
hooks: { enabled: true, token: hook-token-0123456789abcdefgh }
store: { kind: postgres, url: "postgres://app:4711/Xk9+pQ2w/LmZ=@db.internal:5432/hookgate" }
`,
    );
    for (const args of [
      ['check', '--config', file],
      ['--config', file],
    ]) {
      const result = await runHookgate(args, { cwd: dir });
      expect(result.code, args[0]).toBe(2);
      expect(result.stderr, args[0]).toContain('store.url: has an @ after its host');
      expect(`${result.stdout}\n${result.stderr}`, args[0]).not.toContain('Xk9');
      expect(`${result.stdout}\n${result.stderr}`, args[0]).not.toContain('4711');
    }
  } finally {
    cleanup();
  }
}, 60_000);

it.each([
  'postgres://app:pw@db.example.com:5432/app?application_name=worker@eu-1',
  'postgres://myadmin%40myserver:pw@myserver.postgres.database.azure.com:5432/app?user=myadmin@myserver',
])('a query value holding an @ is a URL like any other: %s', (url) => {
  expect(() =>
    resolveConfig(
      {
        hooks: { enabled: true, token: 'hook-token-0123456789abcdefgh' },
        store: { kind: 'postgres', url },
      },
      { baseDir: '/tmp', dataDir: '/tmp/hookgate-unused', env: {} },
    ),
  ).not.toThrow();
  // Shown without the query: never the password.
  expect(describeUrl(url)).not.toContain('pw');
});

it.each([
  'postgres://app:4711/Xk9@db.internal:5432/hookgate',
  'postgres://app:4711?Xk9+pQ2w=@db.internal:5432/hookgate',
  'postgres://app:4711#Xk9@db.internal/hookgate',
  'postgres://app:5?k9@[::1]:5432/app',
  'postgres://app:5?k9@[::1]/app',
])('a password spilled into the path, query or fragment is refused: %s', (url) => {
  expect(() =>
    resolveConfig(
      {
        hooks: { enabled: true, token: 'hook-token-0123456789abcdefgh' },
        store: { kind: 'postgres', url },
      },
      { baseDir: '/tmp', dataDir: '/tmp/hookgate-unused', env: {} },
    ),
  ).toThrow('store.url: has an @ after its host');
});

/**
 * The `store` setting: SQLite by default; PostgreSQL with a URL (usually
 * from a variable), checked without ever repeating the URL in an error.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, resolveConfig } from '../engine/config.ts';
import { restartOnlyChanges } from '../engine/reload/restart-only.ts';

const base = { baseDir: '/tmp', dataDir: '/tmp/hookgate-config-store', env: {} };
const SECRET_URL = 'postgres://hookgate:s3cret-pass@db.internal:5432/hookgate';

function problem(raw: unknown, env: Record<string, string> = {}): string {
  try {
    resolveConfig(raw, { ...base, env });
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('expected a config error');
}

describe('store settings', () => {
  it('defaults to the embedded SQLite store', () => {
    const { config } = resolveConfig({}, base);
    expect(config.store).toEqual({
      kind: 'sqlite',
      poolSize: 10,
      leaseSeconds: 30,
      retentionDays: 30,
    });
  });

  it('takes a PostgreSQL URL from a variable', () => {
    const { config } = resolveConfig(
      { store: { kind: 'postgres', url: '${DATABASE_URL}', leaseSeconds: 5 } },
      { ...base, env: { DATABASE_URL: SECRET_URL } },
    );
    expect(config.store).toMatchObject({ kind: 'postgres', url: SECRET_URL, leaseSeconds: 5 });
  });

  it('requires a URL with kind postgres', () => {
    expect(problem({ store: { kind: 'postgres' } })).toContain('store.url');
  });

  it('refuses a URL that is not postgres:// without repeating it', () => {
    const message = problem({ store: { kind: 'postgres', url: 'mysql://u:s3cret-pass@h/db' } });
    expect(message).toContain('store.url');
    expect(message).not.toContain('s3cret-pass');
  });

  it('refuses a URL on the SQLite store (a forgotten kind would silently use SQLite)', () => {
    expect(problem({ store: { url: SECRET_URL } })).toContain('store.url');
    expect(problem({ store: { url: SECRET_URL } })).not.toContain('s3cret-pass');
  });

  it('refuses leases shorter than 2 s and unknown kinds', () => {
    expect(problem({ store: { kind: 'postgres', url: SECRET_URL, leaseSeconds: 1 } })).toContain(
      'leaseSeconds',
    );
    expect(problem({ store: { kind: 'redis' } })).toContain('store');
  });

  it('refuses the mail flow on PostgreSQL (its mailbox state is not shared)', () => {
    const message = problem({
      store: { kind: 'postgres', url: SECRET_URL },
      hooks: { enabled: true, token: 'x'.repeat(40), gmail: { account: 'me@example.com' } },
    });
    expect(message).toContain('hooks.gmail');
  });

  it('a change of store waits for a restart', () => {
    const sqlite = resolveConfig({}, base).config;
    const postgres = resolveConfig({ store: { kind: 'postgres', url: SECRET_URL } }, base).config;
    expect(restartOnlyChanges(sqlite, postgres)).toContain('store');
  });
});

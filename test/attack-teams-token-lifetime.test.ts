/**
 * Attack: Entra's token endpoint (or whatever answers at the configured token URL) states an
 * absurd `expires_in`. A huge one must not cache the token for ever, a tiny one must not make
 * every part fetch a token of its own.
 */
import { describe, expect, it } from 'vitest';
import { readToken, TEAMS_TOKEN_LIFETIME_S } from '../engine/delivery/adapters/msteams.ts';

const NOW = 1_700_000_000_000;

function refreshAfterMs(expiresIn: unknown): number {
  const fetched = readToken(
    { status: 200, headers: {}, text: '', json: { access_token: 'tok', expires_in: expiresIn } },
    [],
    NOW,
  );
  if (!fetched.token) throw new Error('no token read');
  return fetched.token.refreshAt - NOW;
}

describe('attack: Teams token lifetime out of bounds', () => {
  it('a lifetime of 1e308 seconds is believed for a day at most', () => {
    const after = refreshAfterMs(1e308);
    expect(Number.isFinite(after)).toBe(true);
    expect(after).toBeLessThanOrEqual(TEAMS_TOKEN_LIFETIME_S.max * 1000);
    expect(after).toBeGreaterThan(TEAMS_TOKEN_LIFETIME_S.max * 1000 - 10 * 60_000);
  });

  it('a lifetime of a microsecond keeps the token for half a second at least', () => {
    expect(refreshAfterMs(1e-6)).toBeGreaterThanOrEqual(500);
    expect(refreshAfterMs('0.000001')).toBeGreaterThanOrEqual(500);
  });

  it('an ordinary hour is refreshed five minutes before it ends', () => {
    expect(refreshAfterMs(3599)).toBe((3599 - 300) * 1000);
  });
});

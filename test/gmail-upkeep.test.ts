/**
 * Keeping the watch alive and the mailbox synced: when the watch is due (a
 * property over its age and expiry), what a tick records, and when a sync
 * runs without a push.
 */
import { fc, test } from '@fast-check/vitest';
import { afterEach, describe, expect, it } from 'vitest';
import { openMailboxStore, type MailboxState } from '../engine/gmail/mailbox-store.ts';
import { safetySyncDue, SAFETY_NET_MS, startUpkeep, watchDue } from '../engine/gmail/upkeep.ts';
import { createLogger } from '../engine/log.ts';
import { tempDir } from './helpers/hookgate.ts';

const ACCOUNT = 'me@example.com';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = 1_800_000_000_000;

function state(partial: Partial<MailboxState>): MailboxState {
  return {
    account: ACCOUNT,
    cursor: '1',
    watchExpirationMs: undefined,
    watchedAtMs: undefined,
    lastPushAtMs: undefined,
    lastSyncAtMs: undefined,
    lastSuccessAtMs: undefined,
    lastError: undefined,
    watchError: undefined,
    needsConsent: false,
    refusedTokenHash: undefined,
    ...partial,
  };
}

describe('when the watch is due', () => {
  it('is due when it was never made', () => {
    expect(watchDue(state({}), 720, NOW)).toBe(true);
  });

  test.prop([
    fc.integer({ min: 5, max: 10_080 }),
    fc.integer({ min: 0, max: 14 * DAY }),
    fc.integer({ min: -DAY, max: 7 * DAY }),
  ])(
    'is due exactly when renewEveryMinutes passed or the expiry is within a day',
    (minutes, age, untilExpiry) => {
      const s = state({ watchedAtMs: NOW - age, watchExpirationMs: NOW + untilExpiry });
      const expected = age >= minutes * 60_000 || untilExpiry < DAY;
      expect(watchDue(s, minutes, NOW)).toBe(expected);
    },
  );
});

describe('the safety-net sync', () => {
  it.each([
    ['a push a minute ago', { lastPushAtMs: NOW - 60_000 }, false],
    [
      'no push or good sync for an hour',
      { lastPushAtMs: NOW - SAFETY_NET_MS, lastSuccessAtMs: NOW - SAFETY_NET_MS },
      true,
    ],
    ['a good sync a minute ago', { lastSuccessAtMs: NOW - 60_000 }, false],
    [
      'only failed syncs lately (a failing watch must not starve the safety net)',
      { lastSyncAtMs: NOW - 60_000, lastSuccessAtMs: NOW - 2 * SAFETY_NET_MS },
      true,
    ],
    ['no cursor yet', { cursor: undefined }, false],
    ['consent needed', { needsConsent: true }, false],
  ] as const)('%s -> %s', (_name, partial, expected) => {
    expect(safetySyncDue(state(partial), NOW)).toBe(expected);
  });
});

describe('a tick', () => {
  const dirs: Array<{ cleanup: () => void }> = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) dir.cleanup();
  });

  it('makes the first watch, records its expiry and starts the cursor from its history id', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const store = openMailboxStore(dir.dir);
    let watches = 0;
    const upkeep = startUpkeep({
      account: ACCOUNT,
      renewEveryMinutes: 720,
      store,
      watch: async () => {
        watches++;
        return { kind: 'ok', value: { historyId: '4242', expirationMs: NOW + 7 * DAY } };
      },
      sync: async () => undefined,
      onNeedsConsent: () => undefined,
      logger: createLogger('silent'),
      now: () => NOW,
    });
    await upkeep.tick();
    await upkeep.stop();
    expect(watches).toBe(1);
    expect(store.state(ACCOUNT)).toMatchObject({
      cursor: '4242',
      watchedAtMs: NOW,
      watchExpirationMs: NOW + 7 * DAY,
    });
    store.close();
  });
});

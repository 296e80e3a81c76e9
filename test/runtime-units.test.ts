/**
 * The runtime's pure decisions: is a reply only the heartbeat ack, the
 * one-line summary of a run, the retry delay (backoff, jitter, Retry-After),
 * Retry-After parsing, and the heartbeat schedule setting. Tables for the
 * documented cases, fast-check properties for the rules.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { ConfigError, resolveConfig } from '../engine/config.ts';
import {
  isAckOnly,
  MAX_SERVER_WAIT_MS,
  retryDelayMs,
  summaryLine,
} from '../engine/runtime/replies.ts';
import { retryAfterMs } from '../engine/outbound/retry-after.ts';
import { parseSchedule } from '../engine/runtime/schedule.ts';

const TOKEN = 'HEARTBEAT_OK';

describe('isAckOnly', () => {
  it.each([
    ['the token', 'HEARTBEAT_OK', true],
    ['surrounding whitespace', '  HEARTBEAT_OK \n', true],
    ['bold markdown', '**HEARTBEAT_OK**', true],
    ['inline code', '`HEARTBEAT_OK`', true],
    ['a code block', '```\nHEARTBEAT_OK\n```', true],
    ['a trailing full stop', 'HEARTBEAT_OK.', true],
    ['a quote', '> HEARTBEAT_OK', true],
    ['HTML tags', '<p><b>HEARTBEAT_OK</b></p>', true],
    ['an empty reply', '', false],
    ['only markup', '** **', false],
    ['more text after', 'HEARTBEAT_OK but the disk is full', false],
    ['more text before', 'Disk full. HEARTBEAT_OK', false],
    ['the token twice', 'HEARTBEAT_OK HEARTBEAT_OK', false],
    ['another token', 'HEARTBEAT_NOT_OK', false],
  ])('%s -> %s', (_name, reply, expected) => {
    expect(isAckOnly(reply, TOKEN)).toBe(expected);
  });

  it('uses the configured token', () => {
    expect(isAckOnly('**NO_REPLY**', 'NO_REPLY')).toBe(true);
    expect(isAckOnly('HEARTBEAT_OK', 'NO_REPLY')).toBe(false);
  });

  it.each([
    ['ALL_CLEAR!', 'ALL_CLEAR!', true],
    ['ALL_CLEAR!', '**ALL_CLEAR!**', true],
    ['NOTHING_NEW.', 'NOTHING_NEW.', true],
    ['NOTHING_NEW.', 'NOTHING_NEW', true],
    ['NOTHING_NEW.', 'NOTHING_NEW, but the disk is full', false],
    ['...', '...', true],
    ['...', '', false],
    ['...', '**', false],
  ])('a token with punctuation at its ends (%s): %j -> %s', (token, reply, expected) => {
    expect(isAckOnly(reply, token)).toBe(expected);
  });

  it('a runner reply of 60,000 `<a` (tag starts never closed) is a real reply, read in one pass', () => {
    expect(isAckOnly('<a'.repeat(60_000), TOKEN)).toBe(false);
    expect(isAckOnly(`${'<a'.repeat(60)}HEARTBEAT_OK`, TOKEN)).toBe(false);
  });

  it('the token behind a long run of decoration is a real reply: an ack is never kilobytes', () => {
    expect(isAckOnly(`${' '.repeat(100)}HEARTBEAT_OK${'*'.repeat(100)}`, TOKEN)).toBe(true);
    expect(isAckOnly(`${' \n'.repeat(50_000)}HEARTBEAT_OK`, TOKEN)).toBe(false);
    expect(isAckOnly(`HEARTBEAT_OK${'.'.repeat(50_000)}x`, TOKEN)).toBe(false);
  });

  const tokenArb = fc.stringMatching(/^[A-Z][A-Z0-9_]{0,10}[A-Z0-9]$/);
  const decoration = fc
    .array(
      fc.constantFrom(
        ' ',
        '\n',
        '\t',
        '*',
        '_',
        '`',
        '~',
        '#',
        '>',
        '"',
        "'",
        '.',
        '!',
        '-',
        '<b>',
        '</b>',
        '<em>',
        '</p>',
      ),
      { maxLength: 6 },
    )
    .map((parts) => parts.join(''));
  const word = fc.stringMatching(/^[a-z0-9]{1,8}$/);

  test.prop([tokenArb, decoration, decoration])(
    'the token with any whitespace and light markup around it is ack-only',
    (token, before, after) => {
      expect(isAckOnly(`${before}${token}${after}`, token)).toBe(true);
    },
  );

  test.prop([tokenArb, decoration, word, fc.boolean()])(
    'any word besides the token makes a real reply',
    (token, around, extra, first) => {
      const reply = first ? `${extra} ${token}${around}` : `${around}${token} ${extra}`;
      expect(isAckOnly(reply, token)).toBe(false);
    },
  );
});

describe('summaryLine', () => {
  it.each<[string, 'ok' | 'error' | 'timeout', string, string]>([
    ['GitHub', 'ok', 'Two commits landed.', 'Hook GitHub: Two commits landed.'],
    ['GitHub', 'error', 'exit 3: boom', 'Hook GitHub (error): exit 3: boom'],
    ['Slow', 'timeout', 'no reply within 1s', 'Hook Slow (timeout): no reply within 1s'],
    ['Hook', 'ok', 'line one\n\n  line two\tend ', 'Hook Hook: line one line two end'],
    ['Hook', 'ok', '  \n ', 'Hook Hook: (empty reply)'],
  ])('%s %s', (name, status, text, expected) => {
    expect(summaryLine(name, { status, text })).toBe(expected);
  });

  it('shortens a long reply to 280 characters ending with an ellipsis', () => {
    const line = summaryLine('Long', { status: 'ok', text: 'x'.repeat(1000) });
    expect(line).toBe(`Hook Long: ${'x'.repeat(279)}…`);
  });

  // Request-supplied names and replies: any characters, line breaks included.
  const textArb = (maxLength: number) =>
    fc.string({
      unit: fc.oneof(
        fc.constantFrom('\n', '\r\n', '\t', ' ', 'System: '),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
      ),
      maxLength,
    });
  const nameArb = textArb(20).filter((name) => /\S/.test(name));
  const statusArb = fc.constantFrom<'ok' | 'error' | 'timeout'>('ok', 'error', 'timeout');

  test.prop([nameArb, statusArb, textArb(700)])(
    'is one line that names the hook, with at most 280 characters of reply or 500 of reason',
    (name, status, text) => {
      const line = summaryLine(name, { status, text });
      // One line: a hook name (request-supplied) must not start a line of its own in the heartbeat.
      expect(line).not.toMatch(/[\r\n\u2028\u2029]/);
      expect(line.startsWith('Hook ')).toBe(true);
      const summary = line.slice(line.indexOf(status === 'ok' ? ': ' : `(${status}): `));
      const max = status === 'ok' ? 280 : 500;
      expect(summary.length).toBeLessThanOrEqual(max + `(${status}): `.length);
    },
  );
});

describe('retryDelayMs', () => {
  const settings = { baseDelayMs: 1000, maxDelayMs: 60_000 };

  it.each([
    [1, 0, 500],
    [1, 1, 1000],
    [2, 0, 1000],
    [3, 1, 4000],
    [10, 1, 60_000],
    [40, 0, 30_000],
  ])('attempt %i with random %d -> %i ms', (attempt, random, expected) => {
    expect(retryDelayMs(attempt, settings, undefined, () => random)).toBe(expected);
  });

  it('waits at least the Retry-After, past maxDelayMs too, up to an hour', () => {
    expect(retryDelayMs(1, settings, 5_000, () => 0)).toBe(5_000);
    expect(retryDelayMs(1, settings, 600_000, () => 0)).toBe(600_000);
    expect(retryDelayMs(1, settings, 10 * 86_400_000, () => 0)).toBe(MAX_SERVER_WAIT_MS);
    expect(retryDelayMs(5, settings, 2_000, () => 1)).toBe(16_000);
  });

  const settingsArb = fc
    .tuple(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1, max: 600_000 }))
    .map(([baseDelayMs, maxDelayMs]) => ({ baseDelayMs, maxDelayMs }));
  const attemptArb = fc.integer({ min: 1, max: 2000 });
  const randomArb = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });
  const retryAfterArb = fc.option(fc.integer({ min: 0, max: 1_000_000 }), { nil: undefined });

  test.prop([attemptArb, settingsArb, retryAfterArb, randomArb])(
    'never exceeds maxDelayMs or the Retry-After, and never comes before the Retry-After (up to an hour)',
    (attempt, limits, retryAfter, random) => {
      const delay = retryDelayMs(attempt, limits, retryAfter, () => random);
      const serverWait = Math.min(retryAfter ?? 0, MAX_SERVER_WAIT_MS);
      expect(Number.isFinite(delay)).toBe(true);
      expect(delay).toBeLessThanOrEqual(Math.max(limits.maxDelayMs, serverWait));
      expect(delay).toBeGreaterThanOrEqual(serverWait);
    },
  );

  test.prop([attemptArb, settingsArb, randomArb])(
    'without Retry-After: between half and all of the capped exponential backoff',
    (attempt, limits, random) => {
      const exponential = Math.min(limits.maxDelayMs, limits.baseDelayMs * 2 ** (attempt - 1));
      const delay = retryDelayMs(attempt, limits, undefined, () => random);
      expect(delay).toBeGreaterThanOrEqual(exponential / 2);
      expect(delay).toBeLessThanOrEqual(exponential);
    },
  );

  test.prop([attemptArb, settingsArb, retryAfterArb, randomArb])(
    'is whole milliseconds, so a run due again shows the same time on SQLite and PostgreSQL',
    (attempt, limits, retryAfter, random) => {
      expect(Number.isInteger(retryDelayMs(attempt, limits, retryAfter, () => random))).toBe(true);
    },
  );

  test.prop([attemptArb, settingsArb, randomArb])(
    'does not shrink from one attempt to the next (same jitter)',
    (attempt, limits, random) => {
      expect(retryDelayMs(attempt + 1, limits, undefined, () => random)).toBeGreaterThanOrEqual(
        retryDelayMs(attempt, limits, undefined, () => random),
      );
    },
  );
});

describe('retryAfterMs', () => {
  const now = Date.parse('2025-06-01T12:00:00Z');
  it.each<[string | string[] | undefined, number | undefined]>([
    ['3', 3000],
    [' 0 ', 0],
    [['2', '9'], 2000],
    ['Sun, 01 Jun 2025 12:00:05 GMT', 5000],
    ['Sun, 01 Jun 2025 11:59:00 GMT', 0],
    ['soon', undefined],
    ['', undefined],
    [undefined, undefined],
  ])('%j -> %s', (value, expected) => {
    expect(retryAfterMs(value, now)).toBe(expected);
  });
});

describe('parseSchedule', () => {
  it.each([
    ['off', { kind: 'off' }],
    ['1s', { kind: 'interval', ms: 1000 }],
    ['1000ms', { kind: 'interval', ms: 1000 }],
    ['30m', { kind: 'interval', ms: 1_800_000 }],
    [' 2h ', { kind: 'interval', ms: 7_200_000 }],
    ['1d', { kind: 'interval', ms: 86_400_000 }],
    ['*/5 * * * *', { kind: 'cron', expression: '*/5 * * * *' }],
    ['* * * * * *', { kind: 'cron', expression: '* * * * * *' }],
    ['0 9 * * 1-5', { kind: 'cron', expression: '0 9 * * 1-5' }],
    ['999ms', null],
    ['0s', null],
    ['1.5h', null],
    ['30 minutes', null],
    ['soon', null],
    ['', null],
    ['61 * * * *', null],
  ])('%j -> %j', (every, expected) => {
    expect(parseSchedule(every)).toEqual(expected);
  });

  test.prop([fc.integer({ min: 1, max: 100_000 }), fc.constantFrom('s', 'm', 'h', 'd')])(
    'a whole number of a unit is an interval of that many milliseconds',
    (count, unit) => {
      const ms = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[unit] as number;
      expect(parseSchedule(`${count}${unit}`)).toEqual({ kind: 'interval', ms: count * ms });
    },
  );

  it('an unparseable runtime.heartbeat.every is a config error naming the setting', () => {
    expect(() =>
      resolveConfig({ runtime: { heartbeat: { every: 'soon' } } }, { baseDir: '/tmp', env: {} }),
    ).toThrow(ConfigError);
    expect(() =>
      resolveConfig({ runtime: { heartbeat: { every: 'soon' } } }, { baseDir: '/tmp', env: {} }),
    ).toThrow(/runtime\.heartbeat\.every/);
  });
});

/**
 * The main session's owner decisions as pure functions: who may move the
 * `last` route (tables and fast-check properties), the wrapped summary of a
 * run (no name, reply or note can leave its wrapper), and the boot rules of
 * session.ownerRoutes and session.pinLastRoute.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { ConfigError, resolveConfig } from '../engine/config.ts';
import {
  compileLastRoutePolicy,
  type LastRoutePolicy,
  lastRouteAfter,
  type RouteKey,
} from '../engine/runtime/last-route.ts';
import { summaryText } from '../engine/runtime/replies.ts';
import { END_MARKER, START_MARKER } from '../engine/safety.ts';
import { summaryContent } from './helpers/runtime.ts';

const OWNER: RouteKey = { channel: 'slack', recipient: 'C0OWNER' };
const DECLARED: RouteKey = { channel: 'telegram', recipient: '424242' };
const CALLER: RouteKey = { channel: 'telegram', recipient: '666' };
const MOVED: RouteKey = { channel: 'telegram', recipient: '-100777' };
const open: LastRoutePolicy = { pinned: false, ownerRoutes: [DECLARED] };
const pinned: LastRoutePolicy = { pinned: true, ownerRoutes: [DECLARED] };

describe('lastRouteAfter', () => {
  it.each<
    [
      string,
      LastRoutePolicy,
      'hook' | 'heartbeat',
      RouteKey,
      RouteKey,
      RouteKey | undefined,
      RouteKey | undefined,
    ]
  >([
    ['a hook to the caller`s chat', open, 'hook', CALLER, CALLER, OWNER, undefined],
    [
      'a hook to the caller`s chat, no last route yet',
      open,
      'hook',
      CALLER,
      CALLER,
      undefined,
      undefined,
    ],
    ['a hook on the last route', open, 'hook', OWNER, OWNER, OWNER, undefined],
    ['a hook to a declared owner route', open, 'hook', DECLARED, DECLARED, OWNER, DECLARED],
    [
      'a hook to a declared owner route, pinned',
      pinned,
      'hook',
      DECLARED,
      DECLARED,
      OWNER,
      undefined,
    ],
    [
      'a hook to an owner route that the product moved',
      open,
      'hook',
      DECLARED,
      MOVED,
      OWNER,
      undefined,
    ],
    [
      "a hook on the last route that the product moved (only the owner's own reply follows it)",
      open,
      'hook',
      DECLARED,
      MOVED,
      DECLARED,
      undefined,
    ],
    ['a heartbeat on the last route', open, 'heartbeat', OWNER, OWNER, OWNER, undefined],
    [
      'a heartbeat on the last route that the product moved',
      open,
      'heartbeat',
      DECLARED,
      MOVED,
      DECLARED,
      MOVED,
    ],
    [
      'a heartbeat on a moved chat, pinned',
      pinned,
      'heartbeat',
      DECLARED,
      MOVED,
      DECLARED,
      undefined,
    ],
  ])('%s', (_what, policy, source, attempted, delivered, last, expected) => {
    expect(lastRouteAfter(policy, { source, attempted, delivered }, last)).toEqual(expected);
  });

  const channel = fc.constantFrom('slack', 'telegram', 'discord');
  const routeArb = fc.record({ channel, recipient: fc.constantFrom('1', '2', '3', 'C0OWNER') });
  const policyArb = fc.record({
    pinned: fc.boolean(),
    ownerRoutes: fc.array(routeArb, { maxLength: 3 }),
  });
  const same = (a: RouteKey | undefined, b: RouteKey | undefined) =>
    a?.channel === b?.channel && a?.recipient === b?.recipient;

  test.prop([
    policyArb,
    fc.constantFrom<'hook' | 'heartbeat'>('hook', 'heartbeat'),
    routeArb,
    routeArb,
    fc.option(routeArb, { nil: undefined }),
  ])(
    'moves the route only to where the delivery landed, and only for the owner',
    (policy, source, attempted, delivered, last) => {
      const next = lastRouteAfter(policy, { source, attempted, delivered }, last);
      if (next === undefined) return;
      expect(policy.pinned).toBe(false);
      expect(next).toEqual(delivered);
      const ownerRoute = source === 'hook' && policy.ownerRoutes.some((r) => same(r, delivered));
      // Either the owner's current route (the product moved the chat) or a declared owner route.
      expect((source === 'heartbeat' && same(last, attempted)) || ownerRoute).toBe(true);
    },
  );

  test.prop([policyArb, routeArb, fc.option(routeArb, { nil: undefined })])(
    'a hook to a chat the deployment did not declare never becomes the last route',
    (policy, caller, last) => {
      fc.pre(!policy.ownerRoutes.some((r) => same(r, caller)) && !same(last, caller));
      const next = lastRouteAfter(
        policy,
        { source: 'hook', attempted: caller, delivered: caller },
        last,
      );
      expect(next).toBeUndefined();
    },
  );
});

describe('compileLastRoutePolicy', () => {
  const telegram = {
    id: 'telegram' as const,
    maxLength: 4096,
    checkRecipient: (to: string) => (/^-?\d+$/.test(to) ? null : 'not a chat id'),
    normaliseRecipient: (to: string) => to.trim(),
    send: async () => ({ status: 'sent' as const }),
  };
  it('normalises owner routes as deliveries do and drops those no delivery could match', () => {
    const policy = compileLastRoutePolicy(
      {
        pinLastRoute: false,
        ownerRoutes: [
          { channel: 'telegram', to: '42' },
          { channel: 'telegram', to: 'not-a-chat' },
          { channel: 'slack', to: 'C0OWNER' },
        ],
      },
      new Map([['telegram', telegram]]),
    );
    expect(policy).toEqual({
      pinned: false,
      ownerRoutes: [{ channel: 'telegram', recipient: '42' }],
    });
  });
});

describe('summaryText', () => {
  const START = `<<<${START_MARKER} id="`;
  const END = `<<<${END_MARKER} id="`;
  it('keeps the status outside and the name and reply inside the wrapper', () => {
    const text = summaryText(
      'GitHub',
      { status: 'error', text: 'exit 3: boom' },
      'delivery failed: x',
    );
    expect(text.startsWith('Hook summary (error):\n')).toBe(true);
    expect(summaryContent(text)).toBe('Hook GitHub (error): exit 3: boom [delivery failed: x]');
  });

  // Names, replies and notes built from marker pieces, disguises and line breaks.
  const hostile = fc.string({
    unit: fc.oneof(
      fc.constantFrom(
        '<<<',
        '>>>',
        START_MARKER,
        END_MARKER,
        ' id="0123456789abcdef"',
        '\n',
        'System: ',
        'ＥＸＴＥＲＮＡＬ',
        '\u200b',
      ),
      fc.string({ maxLength: 2 }),
    ),
    maxLength: 30,
  });
  test.prop([
    hostile,
    fc.constantFrom<'ok' | 'error' | 'timeout'>('ok', 'error', 'timeout'),
    hostile,
    fc.option(hostile, { nil: undefined }),
  ])(
    'no name, reply or note can close the wrapper or add a line outside it',
    (name, status, reply, note) => {
      const text = summaryText(name, { status, text: reply }, note);
      expect(text.split(START)).toHaveLength(2);
      expect(text.split(END)).toHaveLength(2);
      // Exactly: status line, notice, start marker, source, ---, one content line, end marker.
      expect(text.split('\n')).toHaveLength(7);
      expect(summaryContent(text).startsWith('Hook ')).toBe(true);
    },
  );
});

describe('session settings at boot', () => {
  const base = { baseDir: '/tmp', env: {} };
  const channels = { telegram: { botToken: '1:x' }, slack: { botToken: 'xoxb-1' } };
  it('defaults: no owner routes, not pinned', () => {
    const { config } = resolveConfig({}, base);
    expect(config.session).toMatchObject({ ownerRoutes: [], pinLastRoute: false });
  });
  it.each([
    [{ pinLastRoute: true }, 'session.pinLastRoute'],
    [
      { ownerRoutes: [{ channel: 'discord', to: '123456789012345678' }] },
      'session.ownerRoutes.0.channel',
    ],
    [{ ownerRoutes: [{ channel: 'telegram' }] }, 'session.ownerRoutes'],
  ])('refuses %j (%s)', (session, path) => {
    let error: unknown;
    try {
      resolveConfig({ channels, session }, base);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).path.startsWith(path)).toBe(true);
  });
  it('accepts a pinned default route and declared owner routes', () => {
    const session = {
      defaultRoute: { channel: 'slack', to: 'C0OWNER' },
      ownerRoutes: [{ channel: 'telegram', to: '42' }],
      pinLastRoute: true,
    };
    expect(resolveConfig({ channels, session }, base).config.session).toMatchObject(session);
  });
});

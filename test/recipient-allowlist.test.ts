/**
 * hooks.allowedRecipients: where a request's or a mapping's `to` may send
 * replies. A property of the decision over generated allowlists and
 * recipients (through the real config and channel adapters), then the HTTP
 * answers a caller sees, a Slack thread covered by its channel's entry, and
 * the deployment's own routes left out of it.
 */
import { fc, test } from '@fast-check/vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileConfig } from '../engine/config/compile.ts';
import { ConfigError, resolveConfig } from '../engine/config.ts';
import { HookError } from '../engine/errors.ts';
import { resolveRoute } from '../engine/delivery/deliver.ts';
import { createAdapters } from '../engine/delivery/registry.ts';
import { checkRecipientAllowed, policyFromConfig, recipientAllowedBy } from '../engine/policy.ts';
import { CHANNELS, startTestServer, type TestServer } from './helpers/hookgate.ts';

const SLACK_IDS = ['C0123456789', 'C0999999999', 'D0123ABCDE'];
const THREAD = '1712345678.123456';
const TELEGRAM_IDS = ['123456', '-100987654', '@news'];

function policyWith(allowed: Record<string, string[]> | undefined) {
  const { config } = resolveConfig(
    {
      channels: CHANNELS,
      hooks: { enabled: true, token: 't', ...(allowed && { allowedRecipients: allowed }) },
    },
    { baseDir: '/tmp', env: {} },
  );
  return policyFromConfig(config);
}

describe('the decision', () => {
  const slackEntry = fc.constantFrom(...SLACK_IDS, `${SLACK_IDS[0]}/${THREAD}`, '*');
  const telegramEntry = fc.constantFrom(...TELEGRAM_IDS, '*');
  const allowlist = fc.option(
    fc.record(
      {
        slack: fc.array(slackEntry, { maxLength: 3 }),
        telegram: fc.array(telegramEntry, { maxLength: 3 }),
      },
      { requiredKeys: [] },
    ),
    { nil: undefined },
  );
  const request = fc.oneof(
    fc.record({
      channel: fc.constant('slack'),
      conversation: fc.constantFrom(...SLACK_IDS),
      thread: fc.option(fc.constant(THREAD), { nil: undefined }),
      pad: fc.constantFrom('', ' '),
    }),
    fc.record({
      channel: fc.constant('telegram'),
      conversation: fc.constantFrom(...TELEGRAM_IDS),
      thread: fc.constant(undefined),
      pad: fc.constantFrom('', ' '),
    }),
  );

  test.prop([allowlist, request])(
    'a recipient passes exactly when no list is set, its channel allows any, or it or its conversation is listed',
    (allowed, r) => {
      const to = `${r.pad}${r.conversation}${r.thread ? `/${r.thread}` : ''}${r.pad}`;
      const entries = allowed?.[r.channel as 'slack' | 'telegram'];
      const expected =
        allowed === undefined ||
        (entries !== undefined &&
          (entries.includes('*') ||
            entries.includes(to.trim()) ||
            (r.channel === 'slack' && entries.includes(r.conversation))));
      let passed = true;
      try {
        checkRecipientAllowed(policyWith(allowed), r.channel, to);
      } catch (err) {
        expect(err).toBeInstanceOf(HookError);
        expect((err as HookError).code).toBe('recipient_not_allowed');
        passed = false;
      }
      expect(passed).toBe(expected);
    },
  );
});

describe('over HTTP', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      channels: CHANNELS,
      session: { defaultRoute: { channel: 'telegram', to: '555' } },
      hooks: {
        allowedRecipients: { telegram: ['123456'], slack: ['C0123456789'] },
        mappings: [
          {
            id: 'chat',
            match: { path: 'chat' },
            action: 'agent',
            channel: 'slack',
            templates: { message: 'hi', to: '{{payload.channel}}' },
          },
        ],
      },
    });
  });
  afterAll(() => server?.stop());

  const agent = (body: Record<string, unknown>) =>
    server.post('agent', { message: 'x', deliver: true, ...body });

  it('a listed recipient is accepted, another refused 403 recipient_not_allowed, nothing stored', async () => {
    expect((await agent({ channel: 'telegram', to: '123456' })).status).toBe(200);
    const before = (await server.store.listActions({ limit: 100 })).length;
    const refused = await agent({ channel: 'telegram', to: '999999' });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({
      ok: false,
      error: { code: 'recipient_not_allowed' },
    });
    expect((await server.store.listActions({ limit: 100 })).length).toBe(before);
  });

  it('a channel without an entry allows no recipient; a `to` whose channel is not known yet (`last`, no route read) is refused', async () => {
    expect((await agent({ channel: 'slack', to: 'C0999999999' })).status).toBe(403);
    expect((await agent({ to: '123456' })).status).toBe(403);
  });

  it("a mapping's rendered `to` is held to it too, and a thread is covered by its channel", async () => {
    expect((await server.post('chat', { channel: `C0123456789/${THREAD}` })).status).toBe(200);
    const other = await server.post('chat', { channel: 'C0999999999' });
    expect(other.status).toBe(403);
  });

  it('the deployment’s own default route is not held to it (it is not in the list, and it booted)', async () => {
    expect((await agent({})).status).toBe(200);
  });
});

describe('at delivery, where `last` is resolved', () => {
  // A `to` with `channel: last` was checked against the channel `last` named at the door; by its
  // delivery (minutes later, a retry) `last` may name another channel that takes the same form
  // (a phone number on WhatsApp and on Signal).
  const channels = {
    whatsapp: {
      phoneNumberId: '1029384756',
      accessToken: 'wa-secret',
      baseUrl: 'http://127.0.0.1:9',
    },
    signal: { url: 'http://127.0.0.1:9', number: '+15550001111' },
  };
  const { config } = resolveConfig(
    {
      channels,
      hooks: { enabled: true, token: 't', allowedRecipients: { whatsapp: ['+15551234567'] } },
    },
    { baseDir: '/tmp', env: {} },
  );
  const adapters = createAdapters(config.channels);
  const allowed = recipientAllowedBy(policyFromConfig(config, adapters));
  const request = { channel: 'last', to: '+15551234567', fallback: false };

  it('a reply whose `last` moved to a channel that does not list its `to` is skipped, naming it', () => {
    const moved = resolveRoute(
      request,
      { channel: 'signal', recipient: '+15557654321' },
      adapters,
      allowed,
    );
    expect(moved).toEqual({ skipped: 'recipient is not in hooks.allowedRecipients.signal' });
    const stayed = resolveRoute(
      request,
      { channel: 'whatsapp', recipient: '+15550000000' },
      adapters,
      allowed,
    );
    expect(stayed).toMatchObject({ channel: 'whatsapp', recipient: '+15551234567' });
  });

  it('the last route itself (no `to`) is never held to it', () => {
    const route = resolveRoute(
      { channel: 'last', fallback: false },
      { channel: 'signal', recipient: '+15557654321' },
      adapters,
      allowed,
    );
    expect(route).toMatchObject({ channel: 'signal', recipient: '+15557654321' });
  });
});

describe('at boot', () => {
  it('a static mapping `to` outside the list is a config error naming the field', () => {
    const loaded = resolveConfig(
      {
        channels: CHANNELS,
        hooks: {
          enabled: true,
          token: 't',
          allowedRecipients: { slack: ['C0123456789'] },
          mappings: [
            {
              id: 'fixed',
              match: { path: 'x' },
              action: 'agent',
              channel: 'slack',
              to: 'C0999999999',
              templates: { message: 'x' },
            },
          ],
        },
      },
      { baseDir: '/tmp', env: {} },
    );
    expect(() => compileConfig(loaded)).toThrow(ConfigError);
    expect(() => compileConfig(loaded)).toThrow(
      /hooks\.mappings\.0\.to: .*allowedRecipients\.slack/,
    );
  });

  it.each([
    [{ slack: ['#general'] }, /hooks\.allowedRecipients\.slack\.0: .*not its name/],
    [{ discord: ['123456789012345678'] }, /hooks\.allowedRecipients\.discord: .*not configured/],
  ])('an entry that could never match is a config error naming it (%j)', (allowed, message) => {
    const loaded = resolveConfig(
      { channels: CHANNELS, hooks: { enabled: true, token: 't', allowedRecipients: allowed } },
      { baseDir: '/tmp', env: {} },
    );
    expect(() => compileConfig(loaded)).toThrow(message);
  });
});

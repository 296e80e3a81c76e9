/**
 * A part's length as the product counts it. Teams takes a message of about 28 KB: a part of
 * 12,000 characters full of quotes and line breaks was a 33 KB activity once escaped in JSON.
 * Slack's 4,000 is of the text it gets: `&`, `<` and `>` sent as entities made parts of 6,000
 * and more. Parts are now cut by those counts; the reply's text is all sent, in order.
 */
import { expect, it } from 'vitest';
import type { ChannelAdapter } from '../engine/delivery/adapter.ts';
import { sendParts } from '../engine/delivery/deliver.ts';
import { ADAPTERS } from '../engine/delivery/registry.ts';
import { slackPlainText } from '../engine/delivery/adapters/slack.ts';

/** The channel's real adapter (its limits), sending into a list instead of its API. */
function recording(id: string, settings: Record<string, unknown>) {
  const sent: string[] = [];
  const real = (ADAPTERS[id] as (s: Record<string, unknown>) => ChannelAdapter)(settings);
  const adapter: ChannelAdapter = {
    ...real,
    async send(_to, text) {
      sent.push(text);
      return { status: 'sent' };
    },
  };
  return { adapter, sent };
}

it('msteams: every activity of a reply of JSON lines stays within 28 KB of UTF-16', async () => {
  const { adapter, sent } = recording('msteams', {
    appId: 'app',
    appPassword: 'secret',
    tenantId: 'tenant',
    serviceUrl: 'http://127.0.0.1:1',
    timeoutMs: 1000,
  });
  const reply = Array.from({ length: 1500 }, (_, i) => `{"key":"value","n":"${i}"}`).join('\n');
  await sendParts(
    { channel: 'msteams', recipient: '19:a@thread.skype', adapter },
    reply,
    0,
    () => {},
  );
  expect(sent.length).toBeGreaterThan(1);
  for (const text of sent) {
    const activity = JSON.stringify({ type: 'message', text, textFormat: 'plain' });
    expect(activity.length * 2).toBeLessThanOrEqual(28 * 1024);
  }
  expect(sent.join('\n')).toBe(reply);
});

it('slack: every text sent is at most 4,000 characters, entities included', async () => {
  const { adapter, sent } = recording('slack', {
    botToken: 'xoxb-1',
    baseUrl: 'http://127.0.0.1:1',
    timeoutMs: 1000,
  });
  const reply = Array.from({ length: 700 }, () => 'a & b < c > d').join('\n');
  await sendParts({ channel: 'slack', recipient: 'C0123456789', adapter }, reply, 0, () => {});
  expect(sent.length).toBeGreaterThan(1);
  for (const text of sent) expect(slackPlainText(text).length).toBeLessThanOrEqual(4000);
  expect(sent.join('\n')).toBe(reply);
});

/**
 * A product's public API address over plain http (a typo, a copied example,
 * a proxy set up in a hurry): every call carries the bot's token or the
 * client secret, which anyone on the path would then read. Such an address
 * stops the start, naming the setting; https and loopback http (a local
 * stand-in or proxy) start, as do the self-hosted bridges over a LAN.
 */
import { describe, expect, it } from 'vitest';
import { compileConfig } from '../engine/config/compile.ts';
import { ConfigError, resolveConfig } from '../engine/config.ts';

const CHANNELS: Record<string, Record<string, string>> = {
  whatsapp: { phoneNumberId: '1029384756', accessToken: 'wa-secret' },
  telegram: { botToken: '123456:tg-secret' },
  discord: { botToken: 'dc-secret' },
  slack: { botToken: 'xoxb-sl-secret' },
  msteams: {
    appId: 'app',
    appPassword: 'teams-secret',
    tenantId: 'tenant',
    serviceUrl: 'https://smba.trafficmanager.net/teams',
  },
  mattermost: { url: 'http://mattermost.lan:8065', token: 'mm-secret' },
  signal: { url: 'http://signal.lan:8080', number: '+15550001111' },
  imessage: { url: 'http://mac.lan:1234', password: 'bb-secret' },
};

function compile(channel: string, settings: Record<string, string>) {
  const loaded = resolveConfig(
    {
      channels: { ...CHANNELS, [channel]: { ...CHANNELS[channel], ...settings } },
      hooks: { enabled: true, token: 'hook-token-0123456789abcdef' },
    },
    { baseDir: '/tmp', env: {} },
  );
  return () => compileConfig(loaded);
}

describe("a product's API over plain http (its secret in clear text)", () => {
  it.each([
    ['whatsapp', 'baseUrl'],
    ['telegram', 'baseUrl'],
    ['discord', 'baseUrl'],
    ['slack', 'baseUrl'],
    ['msteams', 'serviceUrl'],
    ['msteams', 'tokenUrl'],
  ])('channels.%s.%s over http stops the start, naming it', (channel, setting) => {
    const start = compile(channel, { [setting]: 'http://api.example.com/x' });
    expect(start).toThrow(ConfigError);
    expect(start).toThrow(new RegExp(`channels\\.${channel}\\.${setting}: must be https`));
  });

  it('https, loopback http and the self-hosted bridges on a LAN start', () => {
    expect(compile('slack', { baseUrl: 'https://slack.example.com/api' })).not.toThrow();
    expect(compile('telegram', { baseUrl: 'http://127.0.0.1:9/tg' })).not.toThrow();
    expect(compile('discord', { baseUrl: 'http://localhost:9/dc' })).not.toThrow();
    expect(compile('mattermost', {})).not.toThrow();
  });
});

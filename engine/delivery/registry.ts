/**
 * The channel adapters by channel id, built once from the deployment's
 * channel set (`channels` in the config).
 */
import type { Config } from '../../schemas/config.ts';
import type { AdapterFactory, ChannelAdapter } from './adapter.ts';
import { createDiscordAdapter } from './adapters/discord.ts';
import { createIMessageAdapter } from './adapters/imessage.ts';
import { createMattermostAdapter } from './adapters/mattermost.ts';
import { createTeamsAdapter } from './adapters/msteams.ts';
import { createSignalAdapter } from './adapters/signal.ts';
import { createSlackAdapter } from './adapters/slack.ts';
import { createTelegramAdapter } from './adapters/telegram.ts';
import { createWhatsAppAdapter } from './adapters/whatsapp.ts';
import { guardedAdapter } from './guarded-adapter.ts';

/** Adapter factories by channel id. */
export const ADAPTERS: Readonly<Record<string, AdapterFactory>> = Object.freeze({
  whatsapp: createWhatsAppAdapter,
  telegram: createTelegramAdapter,
  discord: createDiscordAdapter,
  slack: createSlackAdapter,
  mattermost: createMattermostAdapter,
  signal: createSignalAdapter,
  imessage: createIMessageAdapter,
  msteams: createTeamsAdapter,
});

/** Build the adapters of the configured channels, each guarded (guarded-adapter.ts). */
export function createAdapters(channels: Config['channels']): Map<string, ChannelAdapter> {
  const adapters = new Map<string, ChannelAdapter>();
  for (const [id, settings] of Object.entries(channels)) {
    const factory = ADAPTERS[id];
    if (factory && settings)
      adapters.set(id, guardedAdapter(factory(settings as Record<string, unknown>)));
  }
  return adapters;
}

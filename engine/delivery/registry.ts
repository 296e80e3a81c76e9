/**
 * The channel adapters by channel id, built once from the deployment's
 * channel set (`channels` in the config).
 */
import type { Config } from '../../schemas/config.ts';
import type { AdapterFactory, ChannelAdapter } from './adapter.ts';

/** Adapter factories by channel id. */
export const ADAPTERS: Readonly<Partial<Record<string, AdapterFactory>>> = Object.freeze({});

/** Build the adapters of the configured channels. */
export function createAdapters(channels: Config['channels']): Map<string, ChannelAdapter> {
  const adapters = new Map<string, ChannelAdapter>();
  for (const [id, settings] of Object.entries(channels)) {
    const factory = ADAPTERS[id];
    if (factory && settings) adapters.set(id, factory(settings as Record<string, unknown>));
  }
  return adapters;
}

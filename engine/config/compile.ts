/**
 * The one compile step: a loaded configuration becomes everything the
 * server, the runtime, `hookgate check` and `hookgate test` use (channel
 * adapters, policy, mappings, agents and their runners, routes). All of them
 * call this, so they cannot disagree about what a configuration means.
 */
import type { ChannelAdapter } from '../delivery/adapter.ts';
import { createAdapters } from '../delivery/registry.ts';
import { checkMailFlow, type MailFlowProblem } from '../gmail/flow.ts';
import { isSecureUrl } from '../outbound/secure-url.ts';
import { compileRoutes, type RouteTable, routeContext } from '../ingress/routes.ts';
import { type CompiledMapping, compileMappings } from '../mappings.ts';
import { checkRecipient, type Policy, policyFromConfig } from '../policy.ts';
import { type AgentSettings, resolveAgents } from '../runtime/agents.ts';
import type { TransformSupervisor } from '../sandbox/supervisor.ts';
import { ConfigError, type LoadedConfig } from '../config.ts';

/** What a running instance supplies to the routes it serves. */
export type RouteExtras = {
  transforms?: TransformSupervisor;
  lastChannel?: () => string | undefined;
};

export type CompiledConfig = {
  loaded: LoadedConfig;
  adapters: ReadonlyMap<string, ChannelAdapter>;
  policy: Policy;
  mappings: readonly CompiledMapping[];
  agents: ReadonlyMap<string, AgentSettings>;
  /** What stops the mail flow without stopping the server (serve warns, check refuses). */
  mailProblems: readonly MailFlowProblem[];
  /** The route table, over the transforms and last route of a running instance. */
  routes(extras?: RouteExtras): RouteTable;
};

/** Compile a loaded configuration; every problem is a ConfigError naming its path. */
export function compileConfig(loaded: LoadedConfig): CompiledConfig {
  const { config } = loaded;
  // One set of channel adapters serves the door's recipient checks and delivery.
  const adapters = createAdapters(config.channels);
  const policy = policyFromConfig(config, adapters);
  checkDefaultRoute(config, policy);
  checkAllowedRecipients(config, policy);
  checkChannelUrls(config);
  const mappings = compileMappings(config, policy, loaded.transformsRoot);
  const routes = (extras: RouteExtras = {}) =>
    compileRoutes(config, mappings, routeContext(config, policy, extras));
  // Compiled once here too: an auth block that cannot work stops every command alike.
  const table = routes();
  const mailProblems =
    config.hooks.enabled && config.hooks.gmail.account ? checkMailFlow(loaded, table).problems : [];
  const agents = resolveAgents(config, loaded.baseDir, policy.defaultAgentId);
  return { loaded, adapters, policy, mappings, agents, mailProblems, routes };
}

/**
 * Every hooks.allowedRecipients entry must have its channel's form (or be '*'), and its channel
 * be configured: an entry that can never match would silently allow nothing.
 */
function checkAllowedRecipients(config: LoadedConfig['config'], policy: Policy): void {
  for (const [channel, entries] of Object.entries(config.hooks.allowedRecipients ?? {})) {
    const check = policy.recipientChecks.get(channel);
    if (!check) {
      throw new ConfigError(
        `hooks.allowedRecipients.${channel}`,
        `channel ${channel} is not configured under channels`,
      );
    }
    entries.forEach((entry, i) => {
      const problem = entry === '*' ? null : check(entry);
      if (problem) throw new ConfigError(`hooks.allowedRecipients.${channel}.${i}`, problem);
    });
  }
}

// The addresses of the products' public APIs, which get a bot's token or a client secret with
// every call: https, or plain http on loopback (a local stand-in or proxy). The self-hosted
// bridges (Mattermost, signal-cli, BlueBubbles) often run on a LAN over plain http.
const CLOUD_URLS: ReadonlyArray<readonly [channel: string, setting: string]> = [
  ['whatsapp', 'baseUrl'],
  ['telegram', 'baseUrl'],
  ['discord', 'baseUrl'],
  ['slack', 'baseUrl'],
  ['msteams', 'serviceUrl'],
  ['msteams', 'tokenUrl'],
];

/** A product's public API address that would carry its secret in clear text stops the start. */
function checkChannelUrls(config: LoadedConfig['config']): void {
  const channels = config.channels as Record<string, Record<string, unknown> | undefined>;
  for (const [channel, setting] of CLOUD_URLS) {
    const value = channels[channel]?.[setting];
    if (typeof value === 'string' && !isSecureUrl(value)) {
      throw new ConfigError(
        `channels.${channel}.${setting}`,
        'must be https (plain http only on loopback): every call carries the secret',
      );
    }
  }
}

/** session.defaultRoute's recipient must have its channel's form. */
function checkDefaultRoute(config: LoadedConfig['config'], policy: Policy): void {
  const seed = config.session.defaultRoute;
  if (!seed) return;
  try {
    checkRecipient(policy, seed.channel, seed.to);
  } catch (err) {
    throw new ConfigError('session.defaultRoute.to', (err as Error).message);
  }
}

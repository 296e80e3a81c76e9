/**
 * Rules a schema cannot express, checked at boot after validation. Pure:
 * each returns the first problem as a dotted path and a message, or null.
 */
import { sharedWithAdmin } from './config/hook-credentials.ts';
import { passwordSpilled } from './store/postgres-url.ts';
import { BlockList } from 'node:net';
import type { Config } from '../schemas/config.ts';
import { addTrusted } from './client-address.ts';
import { isModelRef } from './model-ref.ts';
import { parseSchedule } from './runtime/schedule.ts';
import { isWellFormedSessionKey, keyHasAllowedPrefix } from './session-key.ts';

export type ConfigProblem = { path: string; message: string };

/** Normalise a hooks path: leading slash, no trailing slash; null when unusable. */
export function normaliseHooksPath(raw: string): string | null {
  const trimmed = raw.trim().replace(/\/+$/, '');
  const withSlash = trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
  if (withSlash === '/' || withSlash === '') return null;
  // Plain path segments only: no query, fragment, spaces or dot segments.
  if (!/^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)+$/.test(withSlash)) return null;
  if (withSlash.split('/').some((seg) => seg === '.' || seg === '..')) return null;
  return withSlash;
}

/** Check the cross-field rules; returns the first problem found. */
export function checkConfigRules(config: Config): ConfigProblem | null {
  return (
    checkServer(config) ??
    checkHooks(config) ??
    checkSessionKeys(config) ??
    checkAgents(config) ??
    checkModels(config) ??
    checkRoutes(config) ??
    checkRuntime(config) ??
    checkAdmin(config) ??
    checkStore(config)
  );
}

function checkStore(config: Config): ConfigProblem | null {
  const store = config.store;
  if (store.kind === 'sqlite') {
    return store.url === undefined
      ? null
      : { path: 'store.url', message: 'is for store.kind postgres (set it, or drop the URL)' };
  }
  if (!store.url) {
    return { path: 'store.url', message: 'required with store.kind postgres' };
  }
  // The URL carries a password: the message never repeats it.
  if (!/^postgres(ql)?:\/\//.test(store.url)) {
    return { path: 'store.url', message: 'must be a postgres:// or postgresql:// URL' };
  }
  if (!URL.canParse(store.url)) {
    return {
      path: 'store.url',
      message:
        'does not parse as a URL (postgres://user:password@host:port/database; a port of digits, special characters of the password percent-encoded)',
    };
  }
  if (passwordSpilled(store.url)) {
    return {
      path: 'store.url',
      message:
        'has an @ after its host: percent-encode the user and password (a /, ? or # in them ends the host early, and the rest would be taken for the port or the database)',
    };
  }
  if (config.hooks.gmail?.account) {
    return {
      path: 'hooks.gmail',
      message:
        'the mail flow keeps its mailbox state in the SQLite store; it does not run with store.kind postgres yet',
    };
  }
  return null;
}

function checkServer(config: Config): ConfigProblem | null {
  const list = new BlockList();
  for (const [i, entry] of config.server.trustedProxies.entries()) {
    try {
      addTrusted(list, entry);
    } catch (err) {
      return { path: `server.trustedProxies.${i}`, message: (err as Error).message };
    }
  }
  return null;
}

function checkHooks(config: Config): ConfigProblem | null {
  const hooks = config.hooks;
  if (hooks.enabled && !hooks.token) {
    return { path: 'hooks.token', message: 'required when hooks.enabled is true' };
  }
  if (hooks.token && config.gateway.token && hooks.token === config.gateway.token) {
    return {
      path: 'hooks.token',
      message: 'must differ from gateway.token (use a dedicated hook token)',
    };
  }
  if (normaliseHooksPath(hooks.path) === null) {
    return {
      path: 'hooks.path',
      message: 'must be a path prefix such as /hooks ("/" is not allowed)',
    };
  }
  return null;
}

function checkSessionKeys(config: Config): ConfigProblem | null {
  const { defaultSessionKey, allowedSessionKeyPrefixes: prefixes } = config.hooks;
  if (defaultSessionKey !== undefined) {
    if (!isWellFormedSessionKey(defaultSessionKey)) {
      return {
        path: 'hooks.defaultSessionKey',
        message: 'must be 1-256 printable characters without spaces',
      };
    }
    if (prefixes && !keyHasAllowedPrefix(defaultSessionKey, prefixes)) {
      return {
        path: 'hooks.defaultSessionKey',
        message: 'must start with one of hooks.allowedSessionKeyPrefixes',
      };
    }
  } else if (prefixes && !prefixes.some((p) => 'hook:'.startsWith(p))) {
    return {
      path: 'hooks.allowedSessionKeyPrefixes',
      message:
        'must admit the generated "hook:<uuid>" session keys (add "hook:") or set hooks.defaultSessionKey',
    };
  }
  return null;
}

function checkAgents(config: Config): ConfigProblem | null {
  const seen = new Set<string>();
  let defaults = 0;
  for (const [i, agent] of config.agents.list.entries()) {
    if (seen.has(agent.id)) {
      return { path: `agents.list.${i}.id`, message: `duplicate agent id "${agent.id}"` };
    }
    seen.add(agent.id);
    if (agent.default === true && ++defaults > 1) {
      return { path: `agents.list.${i}.default`, message: 'only one agent may be the default' };
    }
  }
  return null;
}

type Runner = NonNullable<Config['agents']['defaults']['runner']>;

/** What each runner kind needs besides `kind` (its URLs' shape is the schema's). */
function runnerProblem(runner: Runner, at: string, hasProviders: boolean): ConfigProblem | null {
  if (runner.kind === 'command' && !runner.argv)
    return { path: `${at}.argv`, message: 'required for a command runner' };
  // A name is a C string as its value is (the schema refuses a NUL in the value). Named by the
  // env setting, not by the name: printed, it would carry the NUL out.
  if (Object.keys(runner.env ?? {}).some((name) => name.includes('\0'))) {
    return {
      path: `${at}.env`,
      message:
        'a variable name here holds a NUL character: a process environment cannot carry one, so every run would fail to start',
    };
  }
  if (runner.kind === 'http' && !runner.url)
    return { path: `${at}.url`, message: 'required for an http runner' };
  if (runner.kind === 'openai' && !runner.baseUrl && !hasProviders) {
    return {
      path: `${at}.baseUrl`,
      message: 'required for an openai runner (or define providers)',
    };
  }
  return null;
}

/** The owner's routes: on configured channels; a pinned `last` needs the route it is pinned to. */
function checkRoutes(config: Config): ConfigProblem | null {
  const { defaultRoute, ownerRoutes, pinLastRoute } = config.session;
  const declared = [
    ...(defaultRoute ? [{ route: defaultRoute, path: 'session.defaultRoute.channel' }] : []),
    ...ownerRoutes.map((route, i) => ({ route, path: `session.ownerRoutes.${i}.channel` })),
  ];
  for (const { route, path } of declared) {
    if (!(route.channel in config.channels))
      return { path, message: `"${route.channel}" is not configured under channels` };
  }
  if (pinLastRoute && !defaultRoute)
    return { path: 'session.pinLastRoute', message: 'requires session.defaultRoute' };
  return null;
}

function checkRuntime(config: Config): ConfigProblem | null {
  if (parseSchedule(config.runtime.heartbeat.every) === null) {
    return {
      path: 'runtime.heartbeat.every',
      message: 'must be a duration (30s, 30m, 1h), a cron expression, or "off"',
    };
  }
  const hasProviders = Object.keys(config.providers).length > 0;
  const defaults = config.agents.defaults.runner;
  if (defaults) {
    const problem = runnerProblem(defaults, 'agents.defaults.runner', hasProviders);
    if (problem) return problem;
  }
  for (const [i, agent] of config.agents.list.entries()) {
    if (!agent.runner) continue;
    const problem = runnerProblem(agent.runner, `agents.list.${i}.runner`, hasProviders);
    if (problem) return problem;
  }
  return null;
}

function checkModels(config: Config): ConfigProblem | null {
  const models = config.agents.defaults.models;
  if (!models) return null;
  const aliases = new Map<string, string>();
  for (const [id, entry] of Object.entries(models)) {
    if (!isModelRef(id)) {
      return {
        path: `agents.defaults.models.${id}`,
        message: 'model ids have the form <provider>/<model>',
      };
    }
    const alias = entry.alias;
    if (alias === undefined) continue;
    // A request naming that id would be sent to this model instead.
    if (alias !== id && Object.hasOwn(models, alias)) {
      return {
        path: `agents.defaults.models.${id}.alias`,
        message: `alias "${alias}" is the id of another model in the list`,
      };
    }
    const other = aliases.get(alias);
    if (other !== undefined) {
      return {
        path: `agents.defaults.models.${id}.alias`,
        message: `alias "${alias}" is also used by ${other}`,
      };
    }
    aliases.set(alias, id);
  }
  return null;
}

/** True for an address only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127(\.\d{1,3}){3}$/.test(bare);
}

function checkAdmin(config: Config): ConfigProblem | null {
  const admin = config.admin;
  if (!admin) return null;
  if (!admin.token && !isLoopbackHost(admin.host)) {
    return {
      path: 'admin.token',
      message: `required when admin.host (${admin.host}) is beyond loopback`,
    };
  }
  const shared = sharedWithAdmin(config, admin.token);
  if (shared) {
    return {
      path: 'admin.token',
      message: `must differ from ${shared} and every other hook credential (use a dedicated admin token)`,
    };
  }
  if (admin.port !== 0 && admin.port === config.server.port && admin.host === config.server.host) {
    return { path: 'admin.port', message: 'must differ from server.port on the same host' };
  }
  return null;
}

/**
 * The config audit behind `hookgate check`: settings that are valid but go
 * against the operational guidance of spec 5.7 (exposure, caller-chosen
 * sessions, agent routing, raw payloads kept) or a hook token too weak to
 * stand up to guessing. Pure: a validated config in, warnings out; nothing
 * here ever quotes a secret.
 */
import type { Config } from '../schemas/config.ts';
import { SIGNED_PRESET_NAMES } from '../presets/registry.ts';
import { isLoopbackHost } from './config-rules.ts';

/** One piece of advice: the dotted setting it is about, and why. */
export type AuditWarning = { setting: string; message: string };

/** Shortest hook token taken as strong (32: `openssl rand -hex 16`, 24 random bytes in base64). */
export const MIN_TOKEN_LENGTH = 32;
/** Bits a hook token should carry at least (the usual floor for a shared secret). */
export const MIN_TOKEN_BITS = 128;
/** Fewer distinct characters than this reads as a pattern, not randomness, whatever the length. */
export const MIN_TOKEN_DISTINCT = 10;

// Alphabets a generated token is drawn from, smallest first; the first that holds every
// character of the token stands for where it came from.
const ALPHABETS: ReadonlyArray<{ size: number; test: RegExp }> = [
  { size: 10, test: /^[0-9]*$/ },
  { size: 16, test: /^[0-9a-f]*$/ },
  { size: 16, test: /^[0-9A-F]*$/ },
  { size: 26, test: /^[a-z]*$/ },
  { size: 26, test: /^[A-Z]*$/ },
  { size: 36, test: /^[0-9a-z]*$/ },
  { size: 36, test: /^[0-9A-Z]*$/ },
  { size: 62, test: /^[0-9A-Za-z]*$/ },
  { size: 64, test: /^[0-9A-Za-z_-]*=*$/ },
  { size: 64, test: /^[0-9A-Za-z+/]*=*$/ },
];

/**
 * An upper estimate of a token's strength in bits: its length times log2 of the smallest
 * usual alphabet holding it (digits, hex, letters, alphanumerics, base64; 95 printable
 * ASCII characters otherwise). Padding `=` carries nothing and is not counted.
 */
export function estimateTokenBits(token: string): number {
  const chars = [...token.replace(/=+$/, '')];
  const size = ALPHABETS.find((a) => a.test.test(token))?.size ?? 95;
  return chars.length * Math.log2(size);
}

/**
 * True when the token looks guessable: shorter than MIN_TOKEN_LENGTH characters, under
 * MIN_TOKEN_BITS by estimateTokenBits, or fewer than MIN_TOKEN_DISTINCT distinct characters.
 * The length floor is what catches chosen words ("correct-horse-battery"), which the
 * character-set estimate rates far above their real strength.
 */
export function isWeakToken(token: string): boolean {
  const chars = [...token];
  return (
    chars.length < MIN_TOKEN_LENGTH ||
    estimateTokenBits(token) < MIN_TOKEN_BITS ||
    new Set(chars).size < MIN_TOKEN_DISTINCT
  );
}

/** Every warning for this config, in a fixed order (the order of the checks below). */
export function auditConfig(config: Config): AuditWarning[] {
  return [
    ...exposure(config),
    ...sessionKeys(config),
    ...agentRouting(config),
    ...hookToken(config),
    ...admin(config),
    ...unusedPresetSettings(config),
    ...sharedSecrets(config),
    ...ignoredWakeFields(config),
  ];
}

// What an agent run carries and a wake does not: a wake is text (and a mode) for the main
// session, so these settings of a wake mapping change nothing.
const AGENT_ONLY_FIELDS = [
  'name',
  'sessionKey',
  'sessionKeyWhenEmpty',
  'agentId',
  'channel',
  'to',
  'model',
  'thinking',
  'deliver',
  'timeoutSeconds',
] as const;

/**
 * Wake mappings that set what only an agent run reads: accepted, and ignored, which reads as a
 * route to an agent, a chat or a session that is not taken. A mapping with a transform is left
 * out: its module says which kind each action is.
 */
function ignoredWakeFields(config: Config): AuditWarning[] {
  return (config.hooks.mappings ?? []).flatMap((mapping, i) => {
    if (mapping.action !== 'wake' || mapping.transform !== undefined) return [];
    const templates: Record<string, unknown> = mapping.templates ?? {};
    const set = AGENT_ONLY_FIELDS.filter(
      (field) => mapping[field] !== undefined || templates[field] !== undefined,
    );
    if (set.length === 0) return [];
    return [
      {
        setting: `hooks.mappings.${i}`,
        message: `a wake mapping ignores ${set.join(', ')}: a wake is only text (and a mode) for the main session; remove them, or make it an agent mapping (action: agent)`,
      },
    ];
  });
}

/**
 * Signed routes that share a secret: a delivery signed for one verifies on the other, as a new
 * delivery there (its id is kept per route), so a captured delivery can be replayed across them.
 */
function sharedSecrets(config: Config): AuditWarning[] {
  const owners = new Map<string, string>();
  const warnings: AuditWarning[] = [];
  for (const route of signedRoutes(config)) {
    const seen = new Set<string>();
    for (const secret of route.secrets) {
      if (seen.has(secret)) continue;
      seen.add(secret);
      const owner = owners.get(secret);
      if (owner === undefined) owners.set(secret, route.path);
      else if (owner !== route.path) {
        warnings.push({
          setting: route.setting,
          message: `shares a secret with the route "${owner}": a delivery signed for one is taken by the other as a new delivery; give each route its own secret`,
        });
        break;
      }
    }
  }
  return warnings;
}

/** Every signed route's path, where its auth is set, and its secrets (presets then mappings). */
function signedRoutes(config: Config): { path: string; setting: string; secrets: string[] }[] {
  const secretsOf = (auth: { secret?: string; secrets?: readonly string[] } | undefined) => [
    ...(auth?.secret === undefined ? [] : [auth.secret]),
    ...(auth?.secrets ?? []),
  ];
  const enabled = new Set(config.hooks.presets);
  const presets = SIGNED_PRESET_NAMES.filter((name) => enabled.has(name)).map((name) => ({
    path: name,
    setting: `hooks.${name}.auth`,
    secrets: secretsOf(config.hooks[name]?.auth),
  }));
  const mappings = (config.hooks.mappings ?? []).flatMap((mapping, i) => {
    const path = mapping.match?.path;
    const auth = mapping.auth;
    if (path === undefined || auth === undefined || auth.scheme === 'token') return [];
    return [{ path, setting: `hooks.mappings.${i}.auth`, secrets: secretsOf(auth) }];
  });
  return [...presets, ...mappings];
}

function unusedPresetSettings(config: Config): AuditWarning[] {
  const enabled = new Set(config.hooks.presets);
  return SIGNED_PRESET_NAMES.filter((name) => config.hooks[name] && !enabled.has(name)).map(
    (name) => ({
      setting: `hooks.${name}`,
      message: `set, but "${name}" is not in hooks.presets: nothing reads these settings; add it to hooks.presets or remove them`,
    }),
  );
}

function exposure(config: Config): AuditWarning[] {
  const { host, trustedProxies } = config.server;
  // A private address is beyond loopback too: everything on that network reaches the hooks.
  if (isLoopbackHost(host) || trustedProxies.length > 0) return [];
  return [
    {
      setting: 'server.host',
      message:
        `${JSON.stringify(host)} is beyond loopback and no ` +
        'server.trustedProxies are set: keep the hooks behind loopback, a private network ' +
        'or a trusted reverse proxy (and list the proxy in server.trustedProxies)',
    },
  ];
}

function sessionKeys(config: Config): AuditWarning[] {
  const { allowRequestSessionKey, allowedSessionKeyPrefixes } = config.hooks;
  if (!allowRequestSessionKey) return [];
  const warnings: AuditWarning[] = [
    {
      setting: 'hooks.allowRequestSessionKey',
      message:
        'true: callers choose the session their agent run lands in; keep it false unless ' +
        'caller-selected sessions are required',
    },
  ];
  // Only then does a missing list matter: without caller keys, session keys are the config's own.
  if (!allowedSessionKeyPrefixes || allowedSessionKeyPrefixes.length === 0) {
    warnings.push({
      setting: 'hooks.allowedSessionKeyPrefixes',
      message:
        'not set while hooks.allowRequestSessionKey is true: a caller may pick any session ' +
        '(the main session included); restrict it, e.g. ["hook:"]',
    });
  }
  return warnings;
}

function agentRouting(config: Config): AuditWarning[] {
  const allowed = config.hooks.allowedAgentIds;
  if (config.agents.list.length < 2) return [];
  if (allowed && !allowed.includes('*')) return [];
  return [
    {
      setting: 'hooks.allowedAgentIds',
      message: `${allowed ? 'contains "*"' : 'not set'} with ${config.agents.list.length} agents: any caller may route a run to any agent; list the agents hooks may reach`,
    },
  ];
}

/**
 * The guessable-token warnings alone (`hooks.token`, `admin.token`), as `serve` logs them at
 * start; `hookTokenName` names where the hook token came from (HOOKGATE_TOKEN for the quickstart).
 */
export function guessableTokens(config: Config, hookTokenName = 'hooks.token'): AuditWarning[] {
  return hookToken(config, hookTokenName);
}

function hookToken(config: Config, hookTokenName = 'hooks.token'): AuditWarning[] {
  return [
    ...tokenStrength(hookTokenName, config.hooks.token),
    ...tokenStrength('admin.token', config.admin?.token),
  ];
}

function tokenStrength(setting: string, token: string | undefined): AuditWarning[] {
  if (token === undefined || !isWeakToken(token)) return [];
  return [
    {
      setting,
      message: `looks guessable (under ${MIN_TOKEN_LENGTH} characters, under ${MIN_TOKEN_BITS} bits by its length and character set, or under ${MIN_TOKEN_DISTINCT} distinct characters); use a random one, e.g. openssl rand -hex 32`,
    },
  ];
}

function admin(config: Config): AuditWarning[] {
  const settings = config.admin;
  if (!settings) return [];
  const warnings: AuditWarning[] = [];
  if (settings.keepPayloads) {
    warnings.push({
      setting: 'admin.keepPayloads',
      message:
        'true: the console keeps raw request bodies in memory and shows them; keep sensitive ' +
        'payloads out of it unless you are debugging',
    });
  }
  if (!isLoopbackHost(settings.host)) {
    warnings.push({
      setting: 'admin.host',
      message: `${JSON.stringify(settings.host)} is beyond loopback: the admin listener (metrics, console) is for the operator; reach it through loopback (an SSH tunnel or a proxy) rather than the network`,
    });
  }
  return warnings;
}

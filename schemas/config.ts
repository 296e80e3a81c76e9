/**
 * JSON Schema of the configuration file, with the spec's defaults.
 * Validated once at boot by ajv (defaults filled in, unknown keys refused);
 * the `Config` type is derived from it, never written twice.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { channelSchemas } from './channels.ts';
import { credential } from './credentials.ts';
import { presetAuthSchema } from './auth.ts';
import { gmailSchema } from './gmail.ts';
import { mappingSchema } from './mapping.ts';
import { THINKING_LEVELS } from './payloads.ts';

/** Channel identifiers of the deployment's channel set (spec 2.2). */
export const CHANNEL_IDS = [
  'whatsapp',
  'telegram',
  'discord',
  'slack',
  'mattermost',
  'signal',
  'imessage',
  'msteams',
] as const;

export type ChannelId = (typeof CHANNEL_IDS)[number];

const nonEmpty = { type: 'string', minLength: 1, pattern: '\\S' } as const;
// A token a request presents in a header: node:http reads header values as Latin-1 and trims
// them, so a token outside visible ASCII, or with spaces at either end, could never match.
const headerToken = credential.header;
// The name of an environment variable (a name with = or a NUL cannot be set).
const envName = { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' } as const;

const serverSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    host: { type: 'string', minLength: 1, default: '127.0.0.1' },
    port: { type: 'integer', minimum: 0, maximum: 65535, default: 8787 },
    // Addresses or CIDR ranges whose X-Forwarded-For is believed.
    trustedProxies: { type: 'array', items: nonEmpty, default: [] },
    headersTimeoutMs: { type: 'integer', minimum: 100, default: 10_000 },
    // Time for the whole body to arrive before 408.
    requestTimeoutMs: { type: 'integer', minimum: 100, default: 30_000 },
    keepAliveTimeoutMs: { type: 'integer', minimum: 100, default: 5_000 },
    shutdownGraceMs: { type: 'integer', minimum: 0, default: 10_000 },
    // Open connections at once (Node's server.maxConnections); more are closed on arrival.
    maxConnections: { type: 'integer', minimum: 1, default: 1024 },
    // Open connections per client address (IPv6 per /64); trustedProxies are exempt.
    maxConnectionsPerAddress: { type: 'integer', minimum: 1, default: 64 },
  },
  required: ['host', 'port', 'trustedProxies', 'headersTimeoutMs', 'requestTimeoutMs'],
} as const;

const authRateLimitSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    maxFailures: { type: 'integer', minimum: 1, default: 20 },
    windowSeconds: { type: 'integer', minimum: 1, default: 60 },
    lockoutSeconds: { type: 'integer', minimum: 1, default: 60 },
    // Bound on tracked client addresses; the oldest are forgotten first.
    maxClients: { type: 'integer', minimum: 1, default: 10_000 },
  },
} as const;

// A signed preset's settings (hooks.github, hooks.stripe, hooks.slack).
const presetSettings = {
  type: 'object',
  additionalProperties: false,
  properties: {
    auth: presetAuthSchema,
    allowUnsafeExternalContent: { type: 'boolean' },
    agentId: nonEmpty,
    model: nonEmpty,
    thinking: { enum: THINKING_LEVELS },
    deliver: { type: 'boolean' },
    channel: nonEmpty,
    to: nonEmpty,
  },
} as const;

const hooksSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    enabled: { type: 'boolean', default: false },
    token: headerToken,
    path: { type: 'string', default: '/hooks' },
    maxBodyBytes: { type: 'integer', minimum: 1, default: 262_144 },
    maxJsonDepth: { type: 'integer', minimum: 1, maximum: 1000, default: 64 },
    maxTimeoutSeconds: { type: 'integer', minimum: 1, default: 3600 },
    idempotencyWindowSeconds: { type: 'integer', minimum: 1, default: 86_400 },
    // How long a signed route remembers a delivery id (providers retry for up to three days).
    deliveryRetentionSeconds: { type: 'integer', minimum: 60, default: 259_200 },
    authRateLimit: authRateLimitSchema,
    allowedAgentIds: { type: 'array', items: nonEmpty },
    defaultSessionKey: nonEmpty,
    allowRequestSessionKey: { type: 'boolean', default: false },
    allowedSessionKeyPrefixes: { type: 'array', items: nonEmpty },
    // Where a request's or a mapping's `to` may send replies, per channel ('*': anywhere on it).
    allowedRecipients: {
      type: 'object',
      propertyNames: { enum: CHANNEL_IDS },
      additionalProperties: { type: 'array', items: nonEmpty },
    },
    // Built-in mapping packs by name (presets/), after the user's mappings.
    presets: { type: 'array', items: nonEmpty, default: [] },
    mappings: { type: 'array', items: mappingSchema, default: [] },
    // Most actions one request may create (a mapping's forEach fan-out).
    maxActionsPerRequest: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
    // Bounds of what a mapping renders: one field, one action (its fields), one request (all actions).
    maxRenderedFieldBytes: { type: 'integer', minimum: 1024, default: 262_144 },
    maxRenderedActionBytes: { type: 'integer', minimum: 1024, default: 262_144 },
    maxRenderedRequestBytes: { type: 'integer', minimum: 1024, default: 1_048_576 },
    // Inside the transforms root (hooks/transforms beside the config file); relative to it.
    transformsDir: nonEmpty,
    transforms: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        // Time one call may run inside the sandbox (elapsed, as isolated-vm measures it; not CPU).
        cpuTimeoutMs: { type: 'integer', minimum: 10, maximum: 5000, default: 250 },
        // The server's own bound on one call (process hop included); the process is restarted past it.
        deadlineMs: { type: 'integer', minimum: 50, maximum: 5000, default: 2000 },
        memoryLimitMb: { type: 'integer', minimum: 8, maximum: 1024, default: 64 },
        maxOutputBytes: { type: 'integer', minimum: 1024, default: 262_144 },
        recycleAfterCalls: { type: 'integer', minimum: 1, default: 10_000 },
        recycleAboveHeapMb: { type: 'integer', minimum: 1, default: 48 },
        consoleLinesPerMinute: { type: 'integer', minimum: 0, default: 60 },
        // Transform processes; calls are spread over them.
        processes: { type: 'integer', minimum: 1, maximum: 8, default: 1 },
        // Calls waiting in the server for a process; past it a call is refused at once (503).
        maxWaitingCalls: { type: 'integer', minimum: 1, maximum: 10_000, default: 256 },
        // Bytes the inputs of all unanswered calls (waiting or sent) may hold; past it 503. A call
        // holds only its encoded input, so this, not the count, bounds their memory.
        maxWaitingBytes: { type: 'integer', minimum: 1_048_576, default: 33_554_432 },
        // WebAssembly, SharedArrayBuffer and Atomics in transforms (their memory escapes memoryLimitMb).
        allowWebAssembly: { type: 'boolean', default: false },
      },
    },
    // Settings of the signed presets: their secrets, and where their agent runs go.
    github: presetSettings,
    stripe: presetSettings,
    slack: presetSettings,
    // The mail-notification flow (schemas/gmail.ts), written by `hookgate gmail setup`.
    gmail: gmailSchema,
  },
} as const;

/** How an agent turn is run: a local command, an HTTP endpoint, or an OpenAI-compatible API. */
export const runnerSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['kind'],
  properties: {
    kind: { enum: ['command', 'http', 'openai'] },
    // command: argv (no shell), extra environment variables: what a process can be given.
    argv: { type: 'array', minItems: 1, items: credential.argument },
    env: { type: 'object', additionalProperties: credential.envValue },
    // http: POST the run as JSON to url, expect {"reply": "..."}. Sent with its credentials.
    url: credential.url,
    // Sent as they are: a name and a value each must be one HTTP can carry.
    headers: {
      type: 'object',
      propertyNames: credential.headerName,
      additionalProperties: credential.header,
    },
    // openai: chat completions at baseUrl, key from the named environment variable.
    baseUrl: credential.url,
    apiKeyEnv: envName,
    // Model ids as the endpoint knows them, by hookgate model ref (default: the part after "<provider>/").
    models: { type: 'object', additionalProperties: nonEmpty },
    maxTokens: { type: 'integer', minimum: 1 },
  },
} as const;

const agentsSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    defaults: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        model: nonEmpty,
        models: {
          type: 'object',
          additionalProperties: {
            type: 'object',
            additionalProperties: false,
            properties: { alias: nonEmpty },
          },
        },
        // Default bound of an agent run when the request names none.
        timeoutSeconds: { type: 'integer', minimum: 1, default: 600 },
        runner: runnerSchema,
      },
    },
    list: {
      type: 'array',
      default: [],
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id'],
        properties: {
          id: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$' },
          default: { type: 'boolean' },
          name: nonEmpty,
          workspace: nonEmpty,
          model: nonEmpty,
          timeoutSeconds: { type: 'integer', minimum: 1 },
          runner: runnerSchema,
        },
      },
    },
  },
} as const;

export const configSchema = {
  $id: 'hookgate:config',
  type: 'object',
  additionalProperties: false,
  properties: {
    server: serverSchema,
    gateway: {
      type: 'object',
      additionalProperties: false,
      default: {},
      // Presented in a header, as hooks.token is.
      properties: { token: headerToken },
    },
    hooks: hooksSchema,
    agents: agentsSchema,
    // The deployment's channel set: each configured channel is a valid `channel` value.
    channels: {
      type: 'object',
      default: {},
      additionalProperties: false,
      properties: channelSchemas,
    },
    runtime: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        dataDir: { type: 'string', minLength: 1, default: './data' },
        // Group-commit window: 0 commits on the next turn of the event loop.
        commitDelayMs: { type: 'integer', minimum: 0, maximum: 100, default: 0 },
        // Sessions whose actions run in parallel (each session's actions run in order).
        concurrency: { type: 'integer', minimum: 1, maximum: 64, default: 4 },
        // Most bytes of a runner's answer read (stdout, HTTP body); more fails the turn for good.
        maxReplyBytes: { type: 'integer', minimum: 1024, maximum: 67_108_864, default: 1_048_576 },
        // Most bytes of text one turn sends a runner: its message (at most half) and its history
        // (the newest turns that fit the rest); a heartbeat's events past its half wait for the next.
        maxPromptBytes: {
          type: 'integer',
          minimum: 16_384,
          maximum: 67_108_864,
          default: 1_048_576,
        },
        // Retries of work that did not happen (runner unreachable, 429, 5xx).
        retry: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            maxAttempts: { type: 'integer', minimum: 1, maximum: 100, default: 5 },
            baseDelayMs: { type: 'integer', minimum: 1, default: 1000 },
            maxDelayMs: { type: 'integer', minimum: 1, default: 300_000 },
          },
        },
        heartbeat: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            // A duration (30s, 30m, 1h), a cron expression, or "off".
            every: { type: 'string', minLength: 1, default: '30m' },
            prompt: {
              type: 'string',
              minLength: 1,
              default:
                'Heartbeat: review the system events above and act on anything that needs attention. If nothing needs attention, reply with exactly HEARTBEAT_OK.',
            },
            ackToken: { type: 'string', minLength: 1, default: 'HEARTBEAT_OK' },
            // A heartbeat asked for now starts at once unless one started within this window;
            // then it starts when the window ends, with every event asked for meanwhile.
            coalesceMs: { type: 'integer', minimum: 0, maximum: 5_000, default: 250 },
          },
        },
      },
    },
    // Model providers for openai runners: a model ref `<provider>/<model>` uses its provider's
    // endpoint and key, and `models` maps the model name to the endpoint's.
    providers: {
      type: 'object',
      default: {},
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        properties: {
          baseUrl: credential.url,
          apiKeyEnv: envName,
          models: { type: 'object', additionalProperties: nonEmpty },
        },
      },
    },
    session: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        mainKey: { type: 'string', minLength: 1, default: 'main' },
        // Seeds the `last` route before any delivery has happened.
        defaultRoute: {
          type: 'object',
          additionalProperties: false,
          required: ['channel', 'to'],
          properties: { channel: { enum: CHANNEL_IDS }, to: { type: 'string', minLength: 1 } },
        },
        // Routes the owner reads: a hook reply delivered to exactly one of them may move `last`.
        ownerRoutes: {
          type: 'array',
          default: [],
          maxItems: 100,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['channel', 'to'],
            properties: { channel: { enum: CHANNEL_IDS }, to: { type: 'string', minLength: 1 } },
          },
        },
        // `last` is always session.defaultRoute: no delivery moves it.
        pinLastRoute: { type: 'boolean', default: false },
      },
    },
    // The operator's listener: health, readiness, metrics and the console. Off unless set.
    admin: {
      type: 'object',
      additionalProperties: false,
      required: ['port'],
      properties: {
        host: { type: 'string', minLength: 1, default: '127.0.0.1' },
        // 0 picks a free port (printed as `admin listening on http://HOST:PORT`).
        port: { type: 'integer', minimum: 0, maximum: 65535 },
        // Sent as `Authorization: Bearer`; required when host is beyond loopback.
        token: headerToken,
        // The console shows request bodies only when this keeps them (escaped, in memory).
        keepPayloads: { type: 'boolean', default: false },
        // Requests of each kind the console remembers, authenticated and answered before
        // authentication (newest first; older ones of a kind drop out).
        recentRequests: { type: 'integer', minimum: 10, maximum: 10_000, default: 1000 },
      },
    },
    // Where accepted actions and the runtime's records live: the embedded SQLite file in
    // runtime.dataDir (one instance), or one PostgreSQL database shared by several instances.
    store: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        kind: { enum: ['sqlite', 'postgres'], default: 'sqlite' },
        // postgres: a libpq URL (postgres://user:password@host:port/database), usually ${VAR}.
        url: nonEmpty,
        // postgres: connections this instance opens at most.
        poolSize: { type: 'integer', minimum: 2, maximum: 100, default: 10 },
        // postgres: how long a claimed run or the heartbeat's lead lasts without renewal; an
        // instance that died has its runs taken over by another after this long.
        leaseSeconds: { type: 'integer', minimum: 2, maximum: 3600, default: 30 },
        // postgres: finished actions (done, failed, dead) are deleted after this many days.
        retentionDays: { type: 'integer', minimum: 1, maximum: 3650, default: 30 },
      },
    },
    reload: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        // Reload when the config file or a transform module changes.
        watch: { type: 'boolean', default: false },
        // Changes closer together than this are one reload.
        debounceMs: { type: 'integer', minimum: 0, maximum: 60_000, default: 300 },
      },
    },
    log: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        level: {
          enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
          default: 'info',
        },
      },
    },
  },
} as const;

/** The validated configuration, defaults filled in. */
export type Config = FromSchema<typeof configSchema>;
export type HooksConfig = Config['hooks'];
export type AgentsConfig = Config['agents'];

/**
 * JSON Schema of an accepted action: what the route and policy stages build,
 * what the store keeps and what the runtime consumes. Plain and serialisable.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { AUTH_SCHEMES } from './auth.ts';
import { THINKING_LEVELS, text, WAKE_MODES } from './payloads.ts';

const origin = {
  id: { type: 'string', minLength: 1 },
  hook: { type: 'string', minLength: 1 },
  receivedAt: { type: 'string', minLength: 1 },
  client: { type: 'string' },
  requestId: { type: 'string', minLength: 1 },
  // false only when a mapping sets allowUnsafeExternalContent.
  untrusted: { type: 'boolean' },
  // The text as the agent gets it: wrapped as untrusted content (absent when the hook is trusted).
  prompt: { type: 'string' },
  // The mapping that built a mapped action.
  mappingId: { type: 'string', minLength: 1 },
  // How the request was authenticated: the hook token or a provider signature, and its details.
  verification: {
    type: 'object',
    additionalProperties: false,
    required: ['scheme'],
    properties: {
      // gmail-api: a message the mail flow fetched itself from the Gmail API.
      scheme: { enum: [...AUTH_SCHEMES, 'gmail-api'] },
      // Which configured secret matched (0 = the first).
      secretIndex: { type: 'integer', minimum: 0 },
      // The signed timestamp (unix seconds) and its distance from arrival.
      timestamp: { type: 'integer' },
      skewSeconds: { type: 'integer' },
      // The sender's delivery id, the key that makes a repeat a replay.
      deliveryId: { type: 'string' },
      // True when the sender itself says this is a retry (Slack's X-Slack-Retry-Num).
      retry: { type: 'boolean' },
    },
  },
  // What the safety wrapper did, when it wrapped the text.
  safety: {
    type: 'object',
    additionalProperties: false,
    required: ['wrapperId', 'label', 'patterns', 'neutralised'],
    properties: {
      wrapperId: { type: 'string' },
      label: { type: 'string' },
      // Names of known injection patterns found in the content.
      patterns: { type: 'array', items: { type: 'string' } },
      // How many marker-like fragments were neutralised.
      neutralised: { type: 'integer', minimum: 0 },
    },
  },
} as const;
const originRequired = ['id', 'hook', 'receivedAt', 'client', 'requestId', 'untrusted'] as const;

export const wakeActionSchema = {
  $id: 'hookgate:wake-action',
  type: 'object',
  additionalProperties: false,
  required: ['kind', ...originRequired, 'text', 'mode'],
  properties: {
    kind: { const: 'wake' },
    ...origin,
    text,
    mode: { enum: WAKE_MODES },
  },
} as const;

export const SESSION_KEY_SOURCES = ['request', 'default', 'generated', 'mapping'] as const;

export const agentActionSchema = {
  $id: 'hookgate:agent-action',
  type: 'object',
  additionalProperties: false,
  required: [
    'kind',
    ...originRequired,
    'message',
    'name',
    'agentId',
    'sessionKey',
    'sessionKeySource',
    'wakeMode',
    'deliver',
    'channel',
  ],
  properties: {
    kind: { const: 'agent' },
    ...origin,
    message: text,
    name: text,
    agentId: text,
    sessionKey: text,
    sessionKeySource: { enum: SESSION_KEY_SOURCES },
    wakeMode: { enum: WAKE_MODES },
    deliver: { type: 'boolean' },
    channel: text,
    to: text,
    model: text,
    thinking: { enum: THINKING_LEVELS },
    timeoutSeconds: { type: 'integer', minimum: 1 },
  },
} as const;

export type WakeAction = FromSchema<typeof wakeActionSchema>;
export type AgentAction = FromSchema<typeof agentActionSchema>;
export type Action = WakeAction | AgentAction;
export type SessionKeySource = (typeof SESSION_KEY_SOURCES)[number];

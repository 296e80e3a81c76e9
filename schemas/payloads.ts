/**
 * JSON Schemas of the `/wake` and `/agent` request bodies (spec 2.1, 2.2).
 * Strict: unknown fields, wrong types, unknown enum values and blank
 * required strings are refused, never coerced.
 */
import type { FromSchema } from 'json-schema-to-ts';

/**
 * At least one character that shows: white space, controls and the characters that render as
 * nothing (zero-width space and joiners, soft hyphen, tag characters, Hangul fillers: Unicode's
 * default-ignorables) are blank. A text of only those would reach the agent as an empty event.
 */
export const VISIBLE_PATTERN = '[^\\s\\p{Cc}\\p{Default_Ignorable_Code_Point}]';

/** A string with at least one visible character. */
export const text = { type: 'string', minLength: 1, pattern: VISIBLE_PATTERN } as const;

export const WAKE_MODES = ['now', 'next-heartbeat'] as const;
export const THINKING_LEVELS = ['off', 'minimal', 'low', 'medium', 'high', 'xhigh'] as const;

const idempotencyKey = { type: 'string', minLength: 1, maxLength: 256 } as const;

export const wakePayloadSchema = {
  $id: 'hookgate:wake',
  type: 'object',
  additionalProperties: false,
  required: ['text'],
  properties: {
    text,
    mode: { enum: WAKE_MODES },
    idempotencyKey,
  },
} as const;

export const agentPayloadSchema = {
  $id: 'hookgate:agent',
  type: 'object',
  additionalProperties: false,
  required: ['message'],
  properties: {
    message: text,
    name: { ...text, maxLength: 200 },
    agentId: { ...text, maxLength: 64 },
    sessionKey: { type: 'string' },
    wakeMode: { enum: WAKE_MODES },
    // Accepted as an alias of wakeMode (the wake payload's name for it).
    mode: { enum: WAKE_MODES },
    deliver: { type: 'boolean' },
    channel: { ...text, maxLength: 64 },
    to: { ...text, maxLength: 256 },
    model: { ...text, maxLength: 200 },
    thinking: { enum: THINKING_LEVELS },
    timeoutSeconds: { type: 'integer', minimum: 1 },
    idempotencyKey,
  },
} as const;

export type WakePayload = FromSchema<typeof wakePayloadSchema>;
export type AgentPayload = FromSchema<typeof agentPayloadSchema>;
export type WakeMode = (typeof WAKE_MODES)[number];

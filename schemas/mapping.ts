/**
 * JSON Schema of a mapping (spec 2.4, 4.3): how `POST <hooks_path>/<name>`
 * with any JSON payload becomes a wake or agent action. Presets are data of
 * this same shape. The `Mapping` type derives from it.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { authSchema } from './auth.ts';
import { THINKING_LEVELS, text, WAKE_MODES } from './payloads.ts';

/** Action fields a template may produce (all strings). */
export const TEMPLATE_FIELDS = [
  'message',
  'text',
  'name',
  'sessionKey',
  'agentId',
  'channel',
  'to',
  'model',
  'thinking',
  'wakeMode',
  'mode',
] as const;

export type TemplateField = (typeof TEMPLATE_FIELDS)[number];

const templateString = { type: 'string' } as const;

// A top-level string holding `{{` is a template of its field, also where the plain value is one
// of a few words: the words, or such a template (its rendered value is checked per request).
const TEMPLATED = { type: 'string', pattern: '\\{\\{' } as const;

export const mappingSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$' },
    match: {
      type: 'object',
      additionalProperties: false,
      properties: {
        // The <name> in POST <hooks_path>/<name>, compared exactly.
        path: { type: 'string', pattern: '^[A-Za-z0-9._~-]+$' },
        // payload.source must equal it (a generic ingest endpoint routed by payload).
        source: text,
        // A JSON-logic rule over { payload, headers, query, path, method }.
        when: { type: ['object', 'boolean'] },
      },
    },
    // ignore: answered 200, nothing stored or run (a provider's events nobody needs).
    action: { enum: ['wake', 'agent', 'ignore'] },
    templates: {
      type: 'object',
      additionalProperties: false,
      properties: Object.fromEntries(TEMPLATE_FIELDS.map((field) => [field, templateString])) as {
        [K in TemplateField]: typeof templateString;
      },
    },
    // OpenClaw-style aliases of templates.message / templates.text.
    messageTemplate: templateString,
    textTemplate: templateString,
    // Plain values (spec 2.4); a template of the same field wins.
    message: text,
    text,
    name: text,
    sessionKey: text,
    // A templated sessionKey with an empty value: refused (400), or run in the session a run
    // without a key gets (hooks.defaultSessionKey, else a new one).
    sessionKeyWhenEmpty: { enum: ['refuse', 'default'] },
    agentId: text,
    channel: text,
    to: text,
    model: text,
    thinking: { anyOf: [{ enum: THINKING_LEVELS }, TEMPLATED] },
    wakeMode: { anyOf: [{ enum: WAKE_MODES }, TEMPLATED] },
    mode: { anyOf: [{ enum: WAKE_MODES }, TEMPLATED] },
    deliver: { type: 'boolean' },
    timeoutSeconds: { type: 'integer', minimum: 1 },
    allowUnsafeExternalContent: { type: 'boolean' },
    // Source label inside the safety wrapper (default "Webhook").
    label: { ...text, maxLength: 40 },
    // Dotted path to an array in the payload: one action per element (as `item`).
    forEach: { type: 'string', pattern: '^[A-Za-z0-9_$-]+(\\.[A-Za-z0-9_$-]+)*$' },
    // How requests to this mapping's path are authenticated (default: the hook token).
    auth: authSchema,
    // A template for the delivery id that makes a repeat a replay (default: the scheme's own).
    idempotencyKey: { type: 'string', minLength: 1, maxLength: 512 },
    transform: {
      type: 'object',
      additionalProperties: false,
      required: ['module'],
      properties: { module: text, export: text },
    },
  },
} as const;

export type Mapping = FromSchema<typeof mappingSchema>;

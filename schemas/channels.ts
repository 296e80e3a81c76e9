/**
 * JSON Schemas of each channel's settings (`channels.<id>`): exact names,
 * secrets through `${VAR}`, `baseUrl` defaulting to the product's public API
 * (override it for self-hosted bridges and tests).
 */
import type { FromSchema } from 'json-schema-to-ts';
import { credential } from './credentials.ts';

// Each credential has the shape of where it travels (schemas/credentials.ts).
const { url } = credential;
const common = {
  // Bound on one HTTP call to the product.
  timeoutMs: { type: 'integer', minimum: 100, maximum: 120_000, default: 15_000 },
} as const;

export const channelSchemas = {
  whatsapp: {
    type: 'object',
    additionalProperties: false,
    required: ['phoneNumberId', 'accessToken'],
    properties: {
      // In the URL's path (encoded) and a Bearer header.
      phoneNumberId: credential.token,
      accessToken: credential.token,
      apiVersion: { type: 'string', pattern: '^v\\d+\\.\\d+$', default: 'v23.0' },
      baseUrl: { ...url, default: 'https://graph.facebook.com' },
      ...common,
    },
  },
  telegram: {
    type: 'object',
    additionalProperties: false,
    required: ['botToken'],
    properties: {
      botToken: credential.telegramToken,
      baseUrl: { ...url, default: 'https://api.telegram.org' },
      ...common,
    },
  },
  discord: {
    type: 'object',
    additionalProperties: false,
    required: ['botToken'],
    properties: {
      botToken: credential.token,
      baseUrl: { ...url, default: 'https://discord.com/api/v10' },
      ...common,
    },
  },
  slack: {
    type: 'object',
    additionalProperties: false,
    required: ['botToken'],
    properties: {
      botToken: credential.token,
      baseUrl: { ...url, default: 'https://slack.com/api' },
      ...common,
    },
  },
  mattermost: {
    type: 'object',
    additionalProperties: false,
    required: ['url', 'token'],
    properties: { url, token: credential.token, ...common },
  },
  signal: {
    type: 'object',
    additionalProperties: false,
    required: ['url', 'number'],
    properties: { url, number: { type: 'string', pattern: '^\\+[1-9][0-9]{6,14}$' }, ...common },
  },
  imessage: {
    type: 'object',
    additionalProperties: false,
    required: ['url', 'password'],
    // Sent encoded in the query: a password its owner chose, spaces and all.
    properties: { url, password: credential.secret, ...common },
  },
  msteams: {
    type: 'object',
    additionalProperties: false,
    required: ['appId', 'appPassword', 'tenantId', 'serviceUrl'],
    properties: {
      // The OAuth client's id and secret (a form's fields); the tenant in the token URL's path.
      appId: credential.oauth,
      appPassword: credential.oauth,
      tenantId: credential.token,
      // The Bot Connector's service URL for the conversations (from an inbound activity).
      serviceUrl: url,
      // Client-credentials token endpoint; default Microsoft's for the tenant.
      tokenUrl: url,
      ...common,
    },
  },
} as const;

export type WhatsAppSettings = FromSchema<typeof channelSchemas.whatsapp>;
export type TelegramSettings = FromSchema<typeof channelSchemas.telegram>;
export type DiscordSettings = FromSchema<typeof channelSchemas.discord>;
export type SlackSettings = FromSchema<typeof channelSchemas.slack>;
export type MattermostSettings = FromSchema<typeof channelSchemas.mattermost>;
export type SignalSettings = FromSchema<typeof channelSchemas.signal>;
export type IMessageSettings = FromSchema<typeof channelSchemas.imessage>;
export type TeamsSettings = FromSchema<typeof channelSchemas.msteams>;

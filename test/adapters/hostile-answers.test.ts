/**
 * Every channel adapter against a product that answers its error with what
 * it was sent (the Authorization header, the token-bearing URL, the form
 * with the client secret) and 150 KB more, in every field the adapter reads
 * (messages, codes, ids, types, per-recipient results, a moved chat id):
 * the reason is short, names no credential and no padding.
 */
import { describe, expect, it } from 'vitest';
import type { AdapterFactory } from '../../engine/delivery/adapter.ts';
import { createDiscordAdapter } from '../../engine/delivery/adapters/discord.ts';
import { createIMessageAdapter } from '../../engine/delivery/adapters/imessage.ts';
import { createMattermostAdapter } from '../../engine/delivery/adapters/mattermost.ts';
import { createTeamsAdapter } from '../../engine/delivery/adapters/msteams.ts';
import { createSignalAdapter } from '../../engine/delivery/adapters/signal.ts';
import { createSlackAdapter } from '../../engine/delivery/adapters/slack.ts';
import { createTelegramAdapter } from '../../engine/delivery/adapters/telegram.ts';
import { createWhatsAppAdapter } from '../../engine/delivery/adapters/whatsapp.ts';
import { type RecordedRequest, type StandInReply, startStandIn } from '../helpers/stand-in.ts';

const SECRET = 'S3cret&Value=/x y+z';
// The Teams token the Connector is handed (a bearer token's shape), echoed back like the others.
const TEAMS_TOKEN = 'token-S3cret.Value_x~y+z';
const PAD = 'A'.repeat(150_000);
// The longest reason an honest answer gives is well under this; a leak of the padding is not.
const MAX_REASON = 700;

/** All a request carried that could hold a credential, echoed back with padding. */
function echo(req: RecordedRequest): string {
  const form = String(req.headers['content-type']).includes('form') ? req.raw : '';
  return `${req.headers.authorization ?? ''} ${req.url} ${form} ${PAD}`;
}

type Case = {
  id: string;
  factory: AdapterFactory;
  settings: (url: string) => Record<string, unknown>;
  to: string;
  /** Hostile answers, each with every field this adapter reads filled with the echo. */
  answers: Array<(req: RecordedRequest) => StandInReply>;
};

const CASES: Case[] = [
  {
    id: 'whatsapp',
    factory: createWhatsAppAdapter,
    settings: (baseUrl) => ({
      phoneNumberId: '1234567890',
      accessToken: SECRET,
      baseUrl,
      apiVersion: 'v23.0',
      timeoutMs: 5000,
    }),
    to: '+15551234567',
    answers: [400, 429, 500].map((status) => (req: RecordedRequest) => ({
      status,
      body: { error: { code: echo(req), message: echo(req), error_data: { details: echo(req) } } },
    })),
  },
  {
    id: 'telegram',
    factory: createTelegramAdapter,
    settings: (baseUrl) => ({ botToken: SECRET, baseUrl, timeoutMs: 5000 }),
    to: '-1001234567890',
    answers: [
      ...[400, 429, 500].map((status) => (req: RecordedRequest) => ({
        status,
        body: { ok: false, error_code: echo(req), description: echo(req) },
      })),
      (req) => ({
        status: 400,
        body: {
          ok: false,
          description: echo(req),
          parameters: { migrate_to_chat_id: echo(req), retry_after: echo(req) },
        },
      }),
    ],
  },
  {
    id: 'discord',
    factory: createDiscordAdapter,
    settings: (baseUrl) => ({ botToken: SECRET, baseUrl, timeoutMs: 5000 }),
    to: '123456789012345678',
    answers: [400, 429, 500].map((status) => (req: RecordedRequest) => ({
      status,
      body: { code: echo(req), message: echo(req), retry_after: echo(req) },
    })),
  },
  {
    id: 'slack',
    factory: createSlackAdapter,
    settings: (baseUrl) => ({ botToken: SECRET, baseUrl, timeoutMs: 5000 }),
    to: 'C0123456789',
    answers: [200, 400].map((status) => (req: RecordedRequest) => ({
      status,
      body: { ok: false, error: echo(req) },
    })),
  },
  {
    id: 'mattermost',
    factory: createMattermostAdapter,
    settings: (url) => ({ url, token: SECRET, timeoutMs: 5000 }),
    to: 'ab12cd34ef56gh78ij90kl12mn',
    answers: [400, 429, 500].map((status) => (req: RecordedRequest) => ({
      status,
      body: { id: `api.context.invalid ${echo(req)}`, message: echo(req) },
    })),
  },
  {
    id: 'signal',
    factory: createSignalAdapter,
    settings: (url) => ({ url, number: '+15550001111', timeoutMs: 5000 }),
    to: '+15551234567',
    answers: [
      ...[400, 429, 500].map((status) => (req: RecordedRequest) => ({
        status,
        body: { error: echo(req) },
      })),
      // Per-recipient results: one echo, then thousands of distinct well-shaped ones.
      (req) => ({
        status: 201,
        body: {
          timestamp: 1,
          errors: {
            recipients: [
              { reason: echo(req) },
              ...Array.from({ length: 5000 }, (_, i) => ({
                reason: `FAILURE_${'X'.repeat(i % 50)}`,
              })),
            ],
          },
        },
      }),
    ],
  },
  {
    id: 'imessage',
    factory: createIMessageAdapter,
    settings: (url) => ({ url, password: SECRET, timeoutMs: 5000 }),
    to: '+15551234567',
    answers: [400, 429, 500].map((status) => (req: RecordedRequest) => ({
      status,
      body: { status, error: { type: `Bad ${echo(req)}`, message: echo(req) } },
    })),
  },
  {
    id: 'msteams (token endpoint)',
    factory: createTeamsAdapter,
    settings: teamsSettings,
    to: '19:abc@thread.tacv2',
    answers: [400, 401, 500].map((status) => (req: RecordedRequest) => ({
      status,
      body: { error: echo(req), error_description: echo(req) },
    })),
  },
  {
    id: 'msteams (Connector)',
    factory: createTeamsAdapter,
    settings: teamsSettings,
    to: '19:abc@thread.tacv2',
    answers: [400, 403, 500, 503].map(
      (status) => (req: RecordedRequest) =>
        req.url.endsWith('/token')
          ? { status: 200, body: { access_token: TEAMS_TOKEN, expires_in: 3600 } }
          : { status, body: { error: { code: echo(req), message: echo(req) } } },
    ),
  },
];

function teamsSettings(url: string): Record<string, unknown> {
  return {
    appId: 'app-id',
    appPassword: SECRET,
    tenantId: 'tenant',
    serviceUrl: `${url}/teams/`,
    tokenUrl: `${url}/token`,
    timeoutMs: 5000,
  };
}

// Any spelling of the credential (raw, URL-, form- or JSON-encoded) starts with its first letters.
const LEAKS = ['S3cret', PAD.slice(0, 300)];
// A token in the path of a channel's base URL (a relay that authenticates by path).
const PATH_TOKEN = 'PathTok9kQ2mP7vL4sT8';

describe('hostile error answers, every channel', () => {
  it.each(CASES)(
    'a $id answer echoing the credential and 150 KB in every error field: the reason is short and names no credential',
    async (c) => {
      let answer = c.answers[0] as Case['answers'][number];
      const standIn = await startStandIn((req) => answer(req));
      try {
        const adapter = c.factory(c.settings(standIn.url));
        for (answer of c.answers) {
          const result = await adapter.send(c.to, 'hello');
          expect(result.status).not.toBe('sent');
          const reason = (result as { reason: string }).reason;
          expect(reason.length).toBeGreaterThan(0);
          expect(reason.length).toBeLessThanOrEqual(MAX_REASON);
          for (const leak of LEAKS) expect(JSON.stringify(result)).not.toContain(leak);
        }
      } finally {
        await standIn.close();
      }
    },
  );

  it.each(CASES)(
    'a $id product behind a base URL with a token in its path, answering with the path echoed: the reason names no token',
    async (c) => {
      let answer = c.answers[0] as Case['answers'][number];
      const standIn = await startStandIn((req) => answer(req));
      try {
        const adapter = c.factory(c.settings(`${standIn.url}/relay/${PATH_TOKEN}`));
        for (answer of c.answers) {
          const result = await adapter.send(c.to, 'hello');
          expect(result.status).not.toBe('sent');
          // The product did get the token in its path: the echo is real.
          expect(standIn.requests.some((req) => req.url.includes(PATH_TOKEN))).toBe(true);
          expect(JSON.stringify(result)).not.toContain(PATH_TOKEN);
        }
      } finally {
        await standIn.close();
      }
    },
  );
});

/**
 * End-to-end delivery: `/hooks/agent` with `deliver: true` runs a real
 * command-runner agent and its reply reaches a local stand-in of each of the
 * eight products, in the product's wire format; `last` routes, the mapped-hook
 * fallback to whatsapp, long-reply splitting, ack-only suppression, recipient
 * checks at the door, and a rate-limited send retried without a second turn.
 * On each store backend (SQLite, and PostgreSQL where it can start: there,
 * two products stand for all and the door checks are left out), reading
 * state only through the runtime store's interface.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PARTS } from '../engine/delivery/split.ts';
import { BACKEND_START_MS, type Backend, storeBackends } from './helpers/backends.ts';
import type { RecordedRequest, StandIn, StandInReply } from './helpers/stand-in.ts';
import { startStandIn } from './helpers/stand-in.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { AGENT, NODE_BINARY, waitFor } from './helpers/runtime.ts';
import {
  storeOf,
  summariesOf,
  turnsOf,
  waitForRun,
  watchDeliveries,
} from './helpers/store-reads.ts';

type Product = {
  channel: string;
  to: string;
  pathPart: string;
  text: (req: RecordedRequest) => string;
};

// Where each product's request lands on the stand-in, and where its text is in the body.
const PRODUCTS: Product[] = [
  {
    channel: 'whatsapp',
    to: '+15551234567',
    pathPart: '/wa/v23.0/1029384756/messages',
    text: (r) => (r.json as { text: { body: string } }).text.body,
  },
  {
    channel: 'telegram',
    to: '123456789',
    pathPart: '/tg/bot123456:tg-secret/sendMessage',
    text: (r) => (r.json as { text: string }).text,
  },
  {
    channel: 'discord',
    to: '123456789012345678',
    pathPart: '/dc/channels/123456789012345678/messages',
    text: (r) => (r.json as { content: string }).content,
  },
  {
    channel: 'slack',
    to: 'C0123456789',
    pathPart: '/sl/chat.postMessage',
    text: (r) => (r.json as { text: string }).text,
  },
  {
    channel: 'mattermost',
    to: 'abcdefghijklmnopqrstuvwxyz',
    pathPart: '/mm/api/v4/posts',
    text: (r) => (r.json as { message: string }).message,
  },
  {
    channel: 'signal',
    to: '+15557654321',
    pathPart: '/sg/v2/send',
    text: (r) => (r.json as { message: string }).message,
  },
  {
    channel: 'imessage',
    to: '+15550001234',
    pathPart: '/bb/api/v1/message/text',
    text: (r) => (r.json as { message: string }).message,
  },
  {
    channel: 'msteams',
    to: '19:abc-conversation@thread.skype',
    pathPart: '/teams/v3/conversations/',
    text: (r) => (r.json as { text: string }).text,
  },
];

/** The products' documented success answers, by path. */
function success(req: RecordedRequest): StandInReply {
  const url = req.url;
  if (url.startsWith('/wa/'))
    return {
      status: 200,
      body: {
        messaging_product: 'whatsapp',
        contacts: [{ input: '+1', wa_id: '1' }],
        messages: [{ id: 'wamid.X' }],
      },
    };
  if (url.startsWith('/tg/'))
    return {
      status: 200,
      body: { ok: true, result: { message_id: 7, chat: { id: 123456789 }, date: 1, text: 'x' } },
    };
  if (url.startsWith('/dc/'))
    return {
      status: 200,
      body: { id: '1100000000000000000', channel_id: '123456789012345678', content: 'x' },
    };
  if (url.startsWith('/sl/'))
    return { status: 200, body: { ok: true, channel: 'C0123456789', ts: '1700000000.000100' } };
  if (url.startsWith('/mm/'))
    return {
      status: 201,
      body: {
        id: 'p0000000000000000000000001',
        channel_id: 'abcdefghijklmnopqrstuvwxyz',
        message: 'x',
      },
    };
  if (url.startsWith('/sg/')) return { status: 201, body: { timestamp: '1700000000000' } };
  if (url.startsWith('/bb/'))
    return { status: 200, body: { status: 200, message: 'Message sent!', data: { guid: 'G-1' } } };
  if (url.startsWith('/token'))
    return {
      status: 200,
      body: { token_type: 'Bearer', expires_in: 3600, access_token: 'teams-access-token' },
    };
  if (url.startsWith('/teams/')) return { status: 201, body: { id: 'activity-1' } };
  return { status: 404, body: { error: 'no such path' } };
}

function channelSettings(base: string, only?: string[]) {
  const all: Record<string, unknown> = {
    whatsapp: { phoneNumberId: '1029384756', accessToken: 'wa-secret', baseUrl: `${base}/wa` },
    telegram: { botToken: '123456:tg-secret', baseUrl: `${base}/tg` },
    discord: { botToken: 'dc-secret', baseUrl: `${base}/dc` },
    slack: { botToken: 'xoxb-sl-secret', baseUrl: `${base}/sl` },
    mattermost: { url: `${base}/mm`, token: 'mm-secret' },
    signal: { url: `${base}/sg`, number: '+15550001111' },
    imessage: { url: `${base}/bb`, password: 'bb-secret' },
    msteams: {
      appId: 'app',
      appPassword: 'teams-secret',
      tenantId: 'tenant',
      serviceUrl: `${base}/teams`,
      tokenUrl: `${base}/token`,
    },
  };
  return Object.fromEntries(Object.entries(all).filter(([id]) => !only || only.includes(id)));
}

/** The store and data directory a server started on, for starting another over them. */
type Place = { store: Record<string, unknown> | undefined; temp: ReturnType<typeof tempDir> };

async function startWith(
  backend: Backend,
  standIn: StandIn,
  extra: Record<string, unknown> = {},
  only?: string[],
  place?: Place,
) {
  const store = place ? place.store : await backend.store();
  const temp = place?.temp ?? tempDir();
  const record = path.join(temp.dir, 'record.jsonl');
  const { hooks, ...rest } = extra as { hooks?: Record<string, unknown> };
  const server = await startTestServer(
    {
      channels: channelSettings(standIn.url, only),
      runtime: {
        heartbeat: { every: 'off' },
        retry: { maxAttempts: 4, baseDelayMs: 20, maxDelayMs: 2000 },
      },
      agents: {
        defaults: {
          runner: { kind: 'command', argv: [NODE_BINARY, AGENT], env: { AGENT_RECORD: record } },
        },
      },
      ...rest,
      ...(store && { store }),
      hooks: { ...hooks },
    },
    { runtime: true, dataDir: temp.dir },
  );
  return { server, record, temp, place: { store, temp } };
}

for (const backend of storeBackends()) {
  describe.skipIf(backend.skip)(`on ${backend.name}`, () => {
    beforeAll(() => backend.start(), BACKEND_START_MS);

    describe('delivery to each channel', () => {
      let standIn: StandIn;
      let server: TestServer;
      let cleanup: () => void;
      beforeAll(async () => {
        standIn = await startStandIn(success);
        const started = await startWith(backend, standIn);
        server = started.server;
        cleanup = started.temp.cleanup;
      });
      afterAll(async () => {
        await server.stop();
        await standIn.close();
        cleanup();
      });

      // The store sees every product alike: the subset keeps two.
      const products = backend.subset
        ? PRODUCTS.filter((product) => ['whatsapp', 'slack'].includes(product.channel))
        : PRODUCTS;
      it.each(products)(
        '$channel: the reply reaches the product API and leaves the last route alone',
        async (product) => {
          const before = standIn.requests.length;
          const res = await server.post('agent', {
            message: `Hello ${product.channel}`,
            name: 'CI',
            channel: product.channel,
            to: product.to,
          });
          expect(res.status).toBe(200);
          const { runId } = (await res.json()) as { runId: string };
          const done = await waitForRun(server, runId);
          expect(done.state).toBe('done');
          const sent = standIn.requests
            .slice(before)
            .filter((r) => r.url.includes(product.pathPart));
          expect(sent).toHaveLength(1);
          expect(product.text(sent[0] as RecordedRequest)).toBe(`done: Hello ${product.channel}`);
          expect(done.outcome?.delivery).toMatchObject({
            channel: product.channel,
            state: 'sent',
            partsSent: 1,
          });
          // The caller chose the channel and recipient: the owner's `last` route is not theirs to move.
          expect(await storeOf(server).lastRoute('main')).toBeUndefined();
        },
      );

      it('splits a long reply into parts the product accepts, in order', async () => {
        const before = standIn.requests.length;
        const res = await server.post('agent', {
          message: 'LONG:5000',
          channel: 'discord',
          to: '123456789012345678',
        });
        const { runId } = (await res.json()) as { runId: string };
        const done = await waitForRun(server, runId);
        const parts = standIn.requests
          .slice(before)
          .map((r) => (r.json as { content: string }).content);
        expect(parts.length).toBe(3);
        expect(parts.every((p) => p.length <= 2000)).toBe(true);
        expect(parts.join('').replace(/\s+/g, '')).toBe(
          String(done.outcome?.reply).replace(/\s+/g, ''),
        );
        expect(done.outcome?.delivery).toMatchObject({ state: 'sent', parts: 3, partsSent: 3 });
      });

      it('a huge reply is not turned into hundreds of sends: at most MAX_PARTS, the last one says what was cut (reply fan-out attack)', async () => {
        const before = standIn.requests.length;
        const res = await server.post('agent', {
          message: 'LONG:200000',
          channel: 'discord',
          to: '123456789012345678',
        });
        const { runId } = (await res.json()) as { runId: string };
        const done = await waitForRun(server, runId);
        const parts = standIn.requests
          .slice(before)
          .map((r) => (r.json as { content: string }).content);
        expect(parts).toHaveLength(MAX_PARTS);
        expect(parts.every((p) => p.length <= 2000)).toBe(true);
        expect(parts.at(-1)).toMatch(
          /\[reply cut: about \d+ more characters not sent; the whole reply is in hookgate runs\]$/,
        );
        expect(done.outcome?.reply).toHaveLength(200_000);
      });

      it('never delivers an ack-only reply', async () => {
        const before = standIn.requests.length;
        const deliveries = watchDeliveries();
        const res = await server.post('agent', {
          message: 'ACK',
          channel: 'slack',
          to: 'C0123456789',
        });
        const { runId } = (await res.json()) as { runId: string };
        const done = await waitForRun(server, runId);
        expect(done.outcome).toMatchObject({ status: 'ok', ack: true });
        expect(done.outcome?.delivery).toBeUndefined();
        expect(standIn.requests.length).toBe(before);
        expect(deliveries).toEqual([]);
      });

      it('does not deliver an empty reply, nor move the last route', async () => {
        const before = standIn.requests.length;
        const route = await storeOf(server).lastRoute('main');
        const deliveries = watchDeliveries();
        const res = await server.post('agent', {
          message: 'EMPTY',
          channel: 'telegram',
          to: '999',
        });
        const { runId } = (await res.json()) as { runId: string };
        const done = await waitForRun(server, runId);
        expect(standIn.requests.length).toBe(before);
        expect(done.outcome?.delivery?.state).toBe('skipped');
        expect(deliveries).toEqual([{ source: 'agent', channel: 'telegram', outcome: 'skipped' }]);
        expect(await storeOf(server).lastRoute('main')).toEqual(route);
      });

      // Refused before anything is stored: the store makes no difference.
      it.skipIf(backend.subset).each([
        ['whatsapp', '5551234567'],
        ['telegram', 'not-a-chat'],
        ['discord', '123'],
        ['slack', '#general'],
        ['mattermost', 'Town-Square'],
      ])('refuses a %s recipient %j at the door (400 invalid_recipient)', async (channel, to) => {
        const res = await server.post('agent', { message: 'x', channel, to });
        expect(res.status).toBe(400);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
          'invalid_recipient',
        );
      });
    });

    describe('routes and retries', () => {
      it('a mapped hook without a last route falls back to whatsapp', async () => {
        const standIn = await startStandIn(success);
        const { server, temp } = await startWith(backend, standIn, {
          hooks: {
            mappings: [
              {
                id: 'alerts',
                match: { path: 'alerts' },
                templates: { message: 'Alert {{name}}' },
                to: '+15559876543',
              },
            ],
          },
        });
        try {
          const res = await server.post('alerts', { name: 'disk' });
          const { runId } = (await res.json()) as { runId: string };
          await waitForRun(server, runId);
          const sent = standIn.requests.filter((r) => r.url.startsWith('/wa/'));
          expect(sent).toHaveLength(1);
          expect((sent[0]?.json as { to: string } | undefined)?.to).toBe('+15559876543');
        } finally {
          await server.stop();
          await standIn.close();
          temp.cleanup();
        }
      });

      it('says in the summary why a delivery was skipped', async () => {
        const standIn = await startStandIn(success);
        const { server, temp } = await startWith(
          backend,
          standIn,
          {
            hooks: {
              mappings: [
                {
                  id: 'alerts',
                  match: { path: 'alerts' },
                  templates: { message: 'Alert {{name}}' },
                },
              ],
            },
          },
          ['telegram'],
        );
        try {
          const res = await server.post('alerts', { name: 'disk' });
          const { runId } = (await res.json()) as { runId: string };
          const done = await waitForRun(server, runId);
          const [summary] = await summariesOf(server, runId);
          expect(summary).toMatch(
            /^Hook Hook: done: Alert disk \[delivery skipped: channel "whatsapp" is not configured/,
          );
          expect(done.outcome?.delivery?.state).toBe('skipped');
          expect(standIn.requests).toHaveLength(0);
          // Written with the run's end, as nothing was delivered.
          expect(await turnsOf(server, done)).toEqual([
            { role: 'user', runId },
            { role: 'assistant', runId },
          ]);
        } finally {
          await server.stop();
          await standIn.close();
          temp.cleanup();
        }
      });

      it("retries a rate-limited delivery after the product's wait, without running the turn again", async () => {
        let calls = 0;
        const standIn = await startStandIn((req) => {
          calls++;
          if (calls === 1)
            return {
              status: 429,
              headers: { 'retry-after': '1' },
              body: {
                ok: false,
                error_code: 429,
                description: 'Too Many Requests: retry after 1',
                parameters: { retry_after: 1 },
              },
            };
          return success(req);
        });
        const { server, temp, record } = await startWith(backend, standIn, {}, ['telegram']);
        try {
          const res = await server.post('agent', {
            message: 'Rate me',
            channel: 'telegram',
            to: '42',
          });
          const { runId } = (await res.json()) as { runId: string };
          const done = await waitForRun(server, runId, 10_000);
          expect(done.state).toBe('done');
          expect(standIn.requests).toHaveLength(2);
          const turns = readFileSync(record, 'utf8')
            .split('\n')
            .filter((l) => l.includes(runId) && l.includes('"phase":"start"'));
          expect(turns).toHaveLength(1);
          expect(done.outcome?.delivery).toMatchObject({ state: 'sent', attempts: 2 });
          // The turn's prompt and reply are in the session's history once, retry or not.
          expect(await turnsOf(server, done)).toEqual([
            { role: 'user', runId },
            { role: 'assistant', runId },
          ]);
        } finally {
          await server.stop();
          await standIn.close();
          temp.cleanup();
        }
      });

      it('retrying a run that died delivering redoes only the delivery', async () => {
        let up = false;
        const standIn = await startStandIn((req) =>
          up ? success(req) : { status: 503, body: { ok: false, error: 'service_unavailable' } },
        );
        const { server, temp, record } = await startWith(backend, standIn, {}, ['slack']);
        try {
          const res = await server.post('agent', {
            message: 'Deliver me',
            channel: 'slack',
            to: 'C0123456789',
          });
          const { runId } = (await res.json()) as { runId: string };
          const dead = await waitForRun(server, runId, 10_000);
          expect(dead.state).toBe('dead');
          up = true;
          const retried = await server.runtime?.store.retryDead(runId);
          expect(retried).toBe(true);
          server.runtime?.worker.kick();
          const done = await waitForRun(server, runId, 20_000, ['done']);
          expect(done.outcome?.delivery).toMatchObject({ state: 'sent', channel: 'slack' });
          const turns = readFileSync(record, 'utf8')
            .split('\n')
            .filter((l) => l.includes(runId) && l.includes('"phase":"start"'));
          expect(turns).toHaveLength(1);
          expect(
            standIn.requests.filter(
              (r) => (r.json as { text?: string } | undefined)?.text === 'done: Deliver me',
            ).length,
          ).toBe(5);
        } finally {
          await server.stop();
          await standIn.close();
          temp.cleanup();
        }
      });

      it('retries a heartbeat reply that did not go out', async () => {
        let calls = 0;
        const standIn = await startStandIn((req) => {
          calls++;
          return calls === 1
            ? { status: 503, body: { ok: false, error: 'service_unavailable' } }
            : success(req);
        });
        const { server, temp } = await startWith(
          backend,
          standIn,
          { session: { defaultRoute: { channel: 'slack', to: 'C0999999999' } } },
          ['slack'],
        );
        try {
          const deliveries = watchDeliveries();
          expect((await server.post('wake', { text: 'URGENT: disk full' })).status).toBe(200);
          await waitFor('the heartbeat delivery', () => deliveries.length > 0);
          // One record, once it went out: the failed first attempt was retried, not recorded as final.
          expect(deliveries).toEqual([{ source: 'heartbeat', channel: 'slack', outcome: 'sent' }]);
          expect(standIn.requests).toHaveLength(2);
          expect((standIn.requests[1]?.json as { text?: string } | undefined)?.text).toBe(
            'Attention: an urgent event came in.',
          );
        } finally {
          await server.stop();
          await standIn.close();
          temp.cleanup();
        }
      });

      it('a heartbeat reply waiting for its retry is delivered after a restart', async () => {
        let up = false;
        const standIn = await startStandIn((req) =>
          up ? success(req) : { status: 503, body: { ok: false, error: 'service_unavailable' } },
        );
        const settings = {
          session: { defaultRoute: { channel: 'slack', to: 'C0999999999' } },
          // The retry waits longer than the server runs: only the store can carry it over.
          runtime: {
            heartbeat: { every: 'off' },
            retry: { maxAttempts: 4, baseDelayMs: 1500, maxDelayMs: 1500 },
          },
        };
        const first = await startWith(backend, standIn, settings, ['slack']);
        let second: Awaited<ReturnType<typeof startWith>> | undefined;
        try {
          const deliveries = watchDeliveries();
          expect((await first.server.post('wake', { text: 'URGENT: disk full' })).status).toBe(200);
          await waitFor('the first attempt', () => standIn.requests.length === 1);
          await first.server.stop();
          expect(deliveries).toEqual([]);
          up = true;
          second = await startWith(backend, standIn, settings, ['slack'], first.place);
          await waitFor('the heartbeat delivery', () => deliveries.length > 0);
          expect(deliveries).toEqual([{ source: 'heartbeat', channel: 'slack', outcome: 'sent' }]);
          expect(standIn.requests).toHaveLength(2);
          expect((standIn.requests[1]?.json as { text?: string } | undefined)?.text).toBe(
            'Attention: an urgent event came in.',
          );
        } finally {
          await second?.server.stop();
          await standIn.close();
          first.temp.cleanup();
        }
      });

      it('a heartbeat reply whose send a shutdown interrupted is sent at the next start', async () => {
        // The first send hangs until the server gives up on it (its shutdown).
        const standIn = await startStandIn((req) =>
          standIn.requests.length === 1 ? { ...success(req), delayMs: 20_000 } : success(req),
        );
        const settings = { session: { defaultRoute: { channel: 'slack', to: 'C0999999999' } } };
        const first = await startWith(backend, standIn, settings, ['slack']);
        let second: Awaited<ReturnType<typeof startWith>> | undefined;
        try {
          const deliveries = watchDeliveries();
          expect((await first.server.post('wake', { text: 'URGENT: disk full' })).status).toBe(200);
          await waitFor('the first send', () => standIn.requests.length === 1);
          await first.server.stop();
          expect(deliveries).toEqual([]);
          second = await startWith(backend, standIn, settings, ['slack'], first.place);
          await waitFor('the heartbeat delivery', () => deliveries.length > 0);
          expect(deliveries).toEqual([{ source: 'heartbeat', channel: 'slack', outcome: 'sent' }]);
          const texts = standIn.requests.map((r) => (r.json as { text?: string }).text);
          expect(texts).toEqual([
            'Attention: an urgent event came in.',
            'Attention: an urgent event came in.',
          ]);
        } finally {
          await second?.server.stop();
          await standIn.close();
          first.temp.cleanup();
        }
      });

      it('seeds the last route from session.defaultRoute', async () => {
        const standIn = await startStandIn(success);
        const { server, temp } = await startWith(
          backend,
          standIn,
          { session: { defaultRoute: { channel: 'slack', to: 'C0999999999' } } },
          ['slack'],
        );
        try {
          const res = await server.post('agent', { message: 'Seeded' });
          const { runId } = (await res.json()) as { runId: string };
          await waitForRun(server, runId);
          expect((standIn.requests[0]?.json as { channel: string } | undefined)?.channel).toBe(
            'C0999999999',
          );
        } finally {
          await server.stop();
          await standIn.close();
          temp.cleanup();
        }
      });
    });
  });
}

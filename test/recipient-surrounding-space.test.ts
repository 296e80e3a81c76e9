/**
 * A `to` with whitespace around it (a YAML folded template `to: >` then `{{chat}}` renders
 * "…\n"; a chat id read from a line) is trimmed by Telegram, WhatsApp, Signal, Discord and
 * iMessage, checked and sent as the id: the check every channel makes for control characters
 * (a lone surrogate, a NUL inside the id) must not refuse it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    channels: {
      telegram: { botToken: '123456:tg-secret', baseUrl: 'http://127.0.0.1:9' },
      whatsapp: { accessToken: 'wa-secret', phoneNumberId: '1234', baseUrl: 'http://127.0.0.1:9' },
    },
    hooks: {
      defaultSessionKey: 'hook:inbox',
      mappings: [
        {
          id: 'relay',
          match: { path: 'relay' },
          action: 'agent',
          channel: 'telegram',
          // What a YAML folded scalar (`to: >` then the template on the next line) gives.
          templates: { message: '{{text}}', to: '{{chat}}\n' },
        },
      ],
    },
  });
});
afterAll(() => server?.stop());

it.each([
  ['telegram', '123456789\n'],
  ['telegram', '\t-1001234567890'],
  ['whatsapp', '+15551234567\r\n'],
])('%s: a `to` the channel trims (%j) is accepted, as before', async (channel, to) => {
  const res = await server.post('agent', { message: 'hi', channel, to });
  expect(res.status).toBe(200);
});

it("a mapping's folded-scalar `to` template is accepted, as before", async () => {
  const res = await server.post('relay', { text: 'hi', chat: '123456789' });
  expect(res.status).toBe(200);
});

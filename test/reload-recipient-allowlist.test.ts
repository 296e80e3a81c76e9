/**
 * hooks.allowedRecipients across a reload, end to end through the binary:
 * a reply is checked at delivery against the list of the configuration
 * running then, not the one its request was accepted under, and the door
 * takes the new list at once.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { afterEach, expect, it } from 'vitest';
import { TOKEN } from './helpers/hookgate.ts';
import { killAll, postHook, runHookgate, startServer, tempDir } from './helpers/process.ts';
import { query, startStub, waitFor } from './helpers/runtime.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  await killAll();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** An agent endpoint that holds each run until the test lets it answer. */
async function heldRunner() {
  const held: Array<() => void> = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      held.push(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ reply: 'the build is green' }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/run`,
    held: () => held.length,
    answerAll: () => {
      for (const answer of held.splice(0)) answer();
    },
  };
}

function configText(runner: string, telegram: string, allowed: string): string {
  return `server: { host: 127.0.0.1, port: 0 }
hooks:
  enabled: true
  token: ${TOKEN}
  allowedRecipients: { telegram: [${allowed}] }
channels:
  telegram: { botToken: "123456:tg-secret", baseUrl: "${telegram}" }
agents:
  list: [{ id: main, default: true, runner: { kind: http, url: "${runner}" } }]
runtime: { dataDir: ./data, heartbeat: { every: "off" }, retry: { maxAttempts: 1 } }
`;
}

it('a reply is held to the list running at its delivery, and the door takes a reloaded list at once', async () => {
  const runner = await heldRunner();
  const telegram = await startStub((_i, exchange) => ({
    body: {
      ok: true,
      result: { message_id: 1, chat: { id: Number(exchange.body['chat_id']) }, date: 1 },
    },
  }));
  cleanups.push(() => telegram.close());
  const temp = tempDir('hookgate-reload-recipients-');
  cleanups.push(temp.cleanup);
  const file = path.join(temp.dir, 'hookgate.yaml');
  writeFileSync(file, configText(runner.url, telegram.url, '"111"'));
  const server = await startServer(['--config', file]);
  const agent = (to: string) =>
    postHook(
      server.url,
      'agent',
      { message: 'how is the build?', deliver: true, channel: 'telegram', to },
      { token: TOKEN },
    );

  expect((await agent('111')).status).toBe(200);
  expect((await agent('222')).status).toBe(403);
  await waitFor('the run to reach the agent', () => runner.held() === 1);

  // The operator takes 111 off the list while its run is with the agent.
  writeFileSync(file, configText(runner.url, telegram.url, '"222"'));
  const reload = await runHookgate(['reload', '--config', file]);
  expect(reload.code, reload.stderr).toBe(0);
  expect((await agent('111')).status).toBe(403);
  expect((await agent('222')).status).toBe(200);

  await waitFor('both runs to reach the agent', () => runner.held() === 2);
  runner.answerAll();
  const dataDir = path.join(temp.dir, 'data');
  const deliveries = await waitFor('both deliveries recorded', () => {
    const rows = query(
      dataDir,
      'SELECT recipient, state, error FROM deliveries ORDER BY recipient',
    );
    return rows.length === 2 && rows;
  });
  expect(deliveries).toEqual([
    {
      recipient: '111',
      state: 'skipped',
      error: expect.stringContaining('allowedRecipients.telegram'),
    },
    { recipient: '222', state: 'sent', error: null },
  ]);
  expect(telegram.exchanges.map((exchange) => String(exchange.body['chat_id']))).toEqual(['222']);
});

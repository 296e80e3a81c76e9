/**
 * A mail the mapping refuses, met after an expired cursor (mailbox blocking): the fallback to
 * the newest messages must skip it as the history sync does ("one bad message never blocks the
 * mailbox"), not end the sync there. Here the refusal is the render bound (a body that
 * `maxBytes` allows but `maxRenderedFieldBytes` does not); the mail after it must still run
 * and the cursor be replaced.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT, mailHooks } from './helpers/gmail-binary.ts';
import { type GmailStandIn, startGmailStandIn } from './helpers/gmail-stand-in.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { until } from './helpers/signed-http.ts';
import { mailActions as storedMailActions } from './helpers/store-reads.ts';

const PUSH_TOKEN = 'push-secret-token-fallback-refusal';

let gmail: GmailStandIn;
let server: TestServer;
const data = tempDir();

beforeAll(async () => {
  gmail = await startGmailStandIn();
  server = await startTestServer(
    {
      hooks: {
        ...mailHooks(gmail, { push: { mode: 'token' }, pushToken: PUSH_TOKEN, maxBytes: 200_000 }),
        maxRenderedFieldBytes: 65_536,
      },
    },
    { dataDir: data.dir },
  );
  // The start-up tick's sync, then the one after it (pushes recorded before a restart).
  await until(
    'the start-up syncs',
    () => gmail.calls.filter((c) => c.path.endsWith('/history')).length >= 2,
  );
  await server.mail?.sync.idle();
});
afterAll(async () => {
  await server.close();
  await gmail.close();
  data.cleanup();
});

const mailActions = () => storedMailActions(server);

async function push(messageId: string): Promise<number> {
  const body = Buffer.from(
    JSON.stringify({ emailAddress: ACCOUNT, historyId: gmail.historyId() }),
  ).toString('base64');
  const res = await fetch(`${server.mail?.pushUrl}/gmail-pubsub?token=${PUSH_TOKEN}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message: { data: body, messageId } }),
  });
  return res.status;
}

describe('a mail the mapping refuses, after an expired cursor (mailbox blocking)', () => {
  it('is skipped; the mail after it runs and the cursor is replaced', async () => {
    // Mail Gmail no longer keeps the history of: the stored cursor is now too old (404).
    const receivedAtMs = Date.now();
    gmail.addMessage({ from: 'cy@example.com', subject: 'Before', text: 'Hi', receivedAtMs });
    gmail.expireHistory();
    const refused = gmail.addMessage({
      from: 'big@example.net',
      text: 'x'.repeat(150_000),
      receivedAtMs,
    });
    const after = gmail.addMessage({ from: 'ann@example.com', text: 'Hi', receivedAtMs });
    const cursorBefore = server.mail?.state().cursor;
    expect(await push('fallback-1')).toBe(204);
    await until('the mail after it ran', async () =>
      (await mailActions()).some((a) => a.verification?.deliveryId === after),
    );
    const ids = (await mailActions()).map((a) => a.verification?.deliveryId);
    expect(ids).not.toContain(refused);
    await until('the cursor replaced', () => server.mail?.state().cursor !== cursorBefore);
  });
});

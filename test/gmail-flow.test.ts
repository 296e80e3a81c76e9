/**
 * The mail flow end to end, against local stand-ins for Gmail, Google's
 * token endpoint and its key set: a push signed like Pub/Sub's becomes one
 * agent run per new message (through the gmail preset), a redelivered push
 * runs nothing again, a forged push is refused and records nothing, and a
 * restart on the same data picks up a push recorded before it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailHooks, type OidcStandIns, pushTo, startOidcStandIns } from './helpers/gmail-binary.ts';
import type { GmailStandIn } from './helpers/gmail-stand-in.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { makeKey, type SigningKey, signToken } from './helpers/jwks-stand-in.ts';
import { until } from './helpers/signed-http.ts';
import { mailActions } from './helpers/store-reads.ts';

let standIns: OidcStandIns;
let gmail: GmailStandIn;
let key: SigningKey;
const data = tempDir();

beforeAll(async () => {
  standIns = await startOidcStandIns();
  ({ gmail, key } = standIns);
});
afterAll(async () => {
  await standIns.close();
  data.cleanup();
});

const config = () => ({ hooks: mailHooks(gmail, { push: standIns.push }) });

async function push(server: TestServer, messageId: string, token?: string): Promise<number> {
  const bearer = token ?? (await signToken(key));
  return pushTo(server, messageId, String(gmail.historyId()), {
    authorization: `Bearer ${bearer}`,
  });
}

describe('gmail flow', () => {
  let server: TestServer;

  it('watches the mailbox at start', async () => {
    server = await startTestServer(config(), { dataDir: data.dir });
    await until('the first watch', () => gmail.watches.length === 1);
    expect(gmail.watches[0]).toMatchObject({
      topicName: 'projects/my-project/topics/gmail-watch',
      labelIds: ['INBOX'],
    });
  });

  it('a signed push becomes one agent run per new message, wrapped, keyed by the Gmail id', async () => {
    const first = gmail.addMessage({
      from: 'Ann <ann@example.com>',
      subject: 'Invoice 42',
      text: 'Please pay.',
    });
    const second = gmail.addMessage({
      from: 'bob@example.com',
      subject: 'Lunch?',
      text: 'At noon.',
    });
    gmail.addMessage({ from: 'spam@example.com', subject: 'Win', text: 'x', labels: ['SPAM'] });
    expect(await push(server, 'p1')).toBe(204);
    await until('two mail actions', async () => (await mailActions(server)).length === 2);
    const actions = await mailActions(server);
    const sessions = actions.map((a) => (a.kind === 'agent' ? a.sessionKey : '')).sort();
    expect(sessions).toEqual([`hook:gmail:${first}`, `hook:gmail:${second}`].sort());
    for (const action of actions) {
      expect(action).toMatchObject({ kind: 'agent', mappingId: 'gmail', untrusted: true });
      expect(action.verification).toMatchObject({ scheme: 'gmail-api' });
    }
  });

  it('a redelivered push, and pushes at the cursor replayed with fresh message ids (a captured push flood), run nothing and call Gmail for none', async () => {
    const histories = () => gmail.calls.filter((c) => c.path.endsWith('/history')).length;
    await until('the first sync done', () => server.mail?.pendingPushes() === 0);
    // A sync asked for while the first ran (coalesced) may still follow it: let it end first.
    await server.mail?.sync.idle();
    const before = histories();
    expect(await push(server, 'p1')).toBe(204);
    expect(await push(server, 'p2')).toBe(204);
    // Both at the cursor: covered at once, with no Gmail call (a captured push replayed with
    // fresh message ids, up to an hour for an OIDC token, made a history call each).
    expect(server.mail?.pendingPushes()).toBe(0);
    for (let i = 0; i < 20; i++) expect(await push(server, `replayed-${i}`)).toBe(204);
    expect(server.mail?.pendingPushes()).toBe(0);
    expect(histories()).toBe(before);
    expect(await mailActions(server)).toHaveLength(2);
    // A push past the cursor is synced as before (the next tests' pushes).
  });

  it('a push with a token from another key is refused and records nothing', async () => {
    const other = await makeKey('k1');
    const before = gmail.calls.length;
    expect(await push(server, 'p3', await signToken(other))).toBe(401);
    expect(gmail.calls.length).toBe(before);
  });

  it('a mail of forty HTML parts of bare unclosed tags (event-loop stall): one run from its snippet, the parts past the budget unread, the next mail runs too', async () => {
    // 60 KB of <i> each, the words only in the last part: reading them all held the loop seconds.
    const parts = Array.from({ length: 40 }, () => '<i>'.repeat(20_000));
    parts[39] += 'late words';
    const hostile = gmail.addMessage({
      from: 'x@example.net',
      subject: 'Parts',
      htmlParts: parts,
      snippet: 'the snippet',
    });
    const next = gmail.addMessage({ from: 'dee@example.com', subject: 'After', text: 'Fine.' });
    expect(await push(server, 'p-parts')).toBe(204);
    await until('both mail actions', async () => (await mailActions(server)).length === 4);
    const byId = new Map((await mailActions(server)).map((a) => [a.verification?.deliveryId, a]));
    const action = byId.get(hostile);
    const text = action?.kind === 'agent' ? action.message : '';
    expect(text).toContain('the snippet');
    expect(text).not.toContain('late words');
    expect(byId.has(next)).toBe(true);
  });

  it('after a restart on the same data, new mail is still one run each, old mail never again', async () => {
    await server.close();
    const third = gmail.addMessage({ from: 'cy@example.com', subject: 'Later', text: 'Hi' });
    server = await startTestServer(config(), { dataDir: data.dir });
    expect(await push(server, 'p4')).toBe(204);
    await until('the third mail action', async () => (await mailActions(server)).length === 5);
    const ids = (await mailActions(server)).map((a) => a.verification?.deliveryId);
    expect(ids).toContain(third);
    await server.close();
  });
});

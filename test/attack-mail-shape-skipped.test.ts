/**
 * A mail whose MIME shape is past hookgate's bounds on a Gmail answer (more than 500 parts, parts
 * nested deeper than 16, a header longer than 64 KiB, more than 1,000 headers) is not read as
 * far as the bounds allow, nor announced from its headers as a message too large to read is:
 * the whole `full` answer is refused as "not Gmail's", the message is skipped, and the agent
 * never hears of it (only `gmail status` names it). Every one of these shapes is chosen by
 * whoever writes the mail (a digest of 501 small images, forwards of forwards as attachments,
 * a long References header), and Gmail would give the same message as `metadata` at once. The
 * README promises that a message whose body alone fails is announced from its sender, subject
 * and snippet.
 */
import { afterEach, expect, it } from 'vitest';
import { mailHooks, pushTo, startupSynced } from './helpers/gmail-binary.ts';
import { type GmailStandIn, startGmailStandIn } from './helpers/gmail-stand-in.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { until } from './helpers/signed-http.ts';

const PUSH_TOKEN = 'shape-skipped-push-token-0123456789';

let gmail: GmailStandIn | undefined;
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  await gmail?.close();
  gmail = undefined;
});

const text = (partId: string, words: string) => ({
  partId,
  mimeType: 'text/plain',
  filename: '',
  headers: [{ name: 'Content-Type', value: 'text/plain; charset="UTF-8"' }],
  body: { size: words.length, data: Buffer.from(words).toString('base64url') },
});

const TOP = [
  { name: 'From', value: 'ann@example.com' },
  { name: 'Subject', value: 'Quarterly report' },
];

// Each a message's `payload` as Gmail's `full` format gives it.
const SHAPES: Array<[string, () => unknown]> = [
  [
    '501 parts (a digest of small images)',
    () => ({
      partId: '',
      mimeType: 'multipart/mixed',
      filename: '',
      headers: TOP,
      body: { size: 0 },
      parts: [
        text('0', 'See the figures.'),
        ...Array.from({ length: 500 }, (_, i) => ({
          partId: String(i + 1),
          mimeType: 'image/png',
          filename: `fig${i}.png`,
          headers: [],
          body: { size: 100, attachmentId: `att${i}` },
        })),
      ],
    }),
  ],
  [
    'parts nested 17 deep (forwards of forwards as attachments)',
    () => {
      let part: Record<string, unknown> = text('x', 'See the figures.');
      for (let i = 0; i < 17; i++) {
        part = {
          partId: '',
          mimeType: 'multipart/mixed',
          filename: '',
          headers: [],
          body: { size: 0 },
          parts: [part],
        };
      }
      return { ...part, headers: TOP };
    },
  ],
  [
    'a References header of 70,000 characters (a long thread)',
    () => ({
      ...text('', 'See the figures.'),
      headers: [
        ...TOP,
        { name: 'References', value: '<a@example.com> '.repeat(4375) },
        { name: 'Content-Type', value: 'text/plain; charset="UTF-8"' },
      ],
    }),
  ],
  [
    '1,001 headers (a long relay path)',
    () => ({
      ...text('', 'See the figures.'),
      headers: [
        ...TOP,
        ...Array.from({ length: 1000 }, (_, i) => ({
          name: 'Received',
          value: `from relay${i}.example.com`,
        })),
      ],
    }),
  ],
];

it.each(SHAPES)(
  '%s: the mail is announced (from its headers at least), not skipped',
  async (_name, payload) => {
    gmail = await startGmailStandIn();
    const stand = gmail;
    server = await startTestServer({
      hooks: mailHooks(stand, { push: { mode: 'token' }, pushToken: PUSH_TOKEN }),
    });
    const running = server;
    await startupSynced(running);

    const id = stand.addMessage({
      from: 'ann@example.com',
      subject: 'Quarterly report',
      text: 'See the figures.',
    });
    // The history page naming it, then the message as `full` (later calls: the stand-in's own).
    stand.answerNext({
      status: 200,
      body: JSON.stringify({
        history: [
          {
            id: stand.historyId(),
            messagesAdded: [{ message: { id, threadId: id, labelIds: ['INBOX'] } }],
          },
        ],
        historyId: stand.historyId(),
      }),
    });
    stand.answerNext({
      status: 200,
      body: JSON.stringify({
        id,
        threadId: id,
        labelIds: ['INBOX', 'UNREAD'],
        snippet: 'See the figures.',
        historyId: stand.historyId(),
        internalDate: String(Date.now()),
        payload: payload(),
      }),
    });
    expect(await pushTo(running, 'p1', stand.historyId(), { 'x-gog-token': PUSH_TOKEN })).toBe(204);
    await until('the sync ran', () => running.mail?.state().cursor === stand.historyId());
    await running.mail?.sync.idle();
    const actions = await running.store.listActions({ limit: 10 });
    const ran = actions.map((a) => a.action.verification?.deliveryId);
    expect(ran, `gmail status says: ${running.mail?.state().lastError}`).toEqual([id]);
  },
  15_000,
);

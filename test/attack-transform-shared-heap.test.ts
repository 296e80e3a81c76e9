/**
 * Attack by one mapping's transform on another's mail: every module's context in a transform
 * process shares one isolate and its memory limit. A webhook mapping's transform keeps most of
 * that memory in its context's globals; the gmail mapping's honest transform, given a mail it
 * needs some memory for, then runs the isolate out of memory. That failure was taken for the
 * mail's own ("its memory filled: a mail's text chose it") and the mail was skipped for good,
 * though the same mail ran once the isolate was rebuilt without the other mapping's state. Out
 * of memory is now counted as out of time is: tried at the next syncs, skipped at the third in
 * a row.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { failedOnInput, mayPassLater, TransformFailure } from '../engine/sandbox/call-outcome.ts';
import { mailHooks, pushTo, startupSynced } from './helpers/gmail-binary.ts';
import { type GmailStandIn, startGmailStandIn } from './helpers/gmail-stand-in.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { until } from './helpers/signed-http.ts';

const PUSH_TOKEN = 'shared-heap-push-token-0123456789abcd';
let gmail: GmailStandIn | undefined;
let server: TestServer | undefined;
const temp = tempDir();
afterEach(async () => {
  await server?.close();
  await gmail?.close();
  temp.cleanup();
});

// 40 arrays of 128 Ki doubles: about 40 MB of the isolate's 64.
const FORTY_MB = 'Array.from({ length: 40 }, (_, i) => new Array(128 * 1024).fill(i + 0.5))';
// Honest: a long mail takes some memory to work through (here as much as the hog keeps).
const MAIL = `export default ({ payload }) => {
  const m = payload.messages[0];
  const work = m.subject.includes('long') ? ${FORTY_MB} : [];
  return { message: 'Mail from ' + m.from + ': ' + m.subject + ' (' + work.length + ')' };
};`;
const HOG = `export default () => { globalThis.kept ??= ${FORTY_MB}; return { message: 'kept' }; };`;

it("a mail run out of memory by another mapping's state is tried again, not skipped", async () => {
  const root = path.join(temp.dir, 'hooks', 'transforms');
  mkdirSync(root, { recursive: true });
  writeFileSync(path.join(root, 'mail.js'), MAIL);
  writeFileSync(path.join(root, 'hog.js'), HOG);
  gmail = await startGmailStandIn();
  server = await startTestServer(
    {
      hooks: {
        ...mailHooks(gmail, { push: { mode: 'token' }, pushToken: PUSH_TOKEN }),
        // No rebuild for the heap in between: the hog's state stays until memory runs out.
        // Time enough for 40 MB of allocation on a loaded machine (it took over 250 ms there).
        transforms: {
          memoryLimitMb: 64,
          recycleAboveHeapMb: 1024,
          cpuTimeoutMs: 5000,
          deadlineMs: 5000,
        },
        mappings: [
          { id: 'my-gmail', match: { path: 'gmail' }, transform: { module: 'mail.js' } },
          { id: 'hog', match: { path: 'hog' }, transform: { module: 'hog.js' } },
        ],
      },
    },
    { dataDir: temp.dir },
  );
  const running = server;
  const g = gmail;
  await startupSynced(running);
  expect((await running.post('hog', {})).status).toBe(200);
  const push = (id: string) => pushTo(running, id, g.historyId(), { 'x-gog-token': PUSH_TOKEN });
  const long = g.addMessage({ from: 'friend@example.com', subject: 'A long report', text: 'x' });
  const ran = async () =>
    (await running.store.listActions({ limit: 100 })).map((a) => a.action.verification?.deliveryId);
  const skipped = () => running.mail?.state().lastError?.includes(`message ${long} skipped`);
  for (let i = 1; i <= 3 && !(await ran()).includes(long) && !skipped(); i++) {
    const before = running.mail?.state().lastSyncAtMs ?? 0;
    expect(await push(`p-${i}`)).toBe(204);
    await until('the sync it asked for', () => (running.mail?.state().lastSyncAtMs ?? 0) > before);
    await running.mail?.sync.idle();
  }
  expect(skipped()).toBeFalsy();
  expect(await ran()).toContain(long);
}, 60_000);

it('out of memory is not taken for the input alone: it may pass later, as out of time may', () => {
  const memory = new TransformFailure('transform_failed', 'x', 'memory');
  expect(failedOnInput(memory)).toBe(false);
  expect(mayPassLater(memory)).toBe(true);
  expect(mayPassLater(new TransformFailure('transform_timeout', 'x', 'timeout'))).toBe(true);
  expect(mayPassLater(new TransformFailure('transform_failed', 'x', 'threw'))).toBe(false);
  expect(mayPassLater(new TransformFailure('transform_failed', 'x', 'crash'))).toBe(false);
});

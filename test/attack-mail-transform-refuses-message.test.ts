/**
 * Attack: a mail that the operator's own gmail transform fails on (it throws on a subject it
 * did not expect; anyone can send such a mail). The transform's failure (500 transform_failed)
 * was taken for the mailbox's: the sync stopped at that message, recorded nothing, and tried
 * nothing again, and every later sync met the same message first: the mailbox was blocked for
 * good while `gmail status` showed nothing wrong. A transform's refusal of one message (a
 * throw, an invalid action) is now that message's: skipped, logged and shown as the last error,
 * the mail after it run. Out of time or of memory, it is tried at the next syncs and skipped at
 * the third in a row (a loaded host stretches the time too, and another mapping's state fills
 * the memory the isolate shares); the process's or the module's failures wait.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { HookError } from '../engine/errors.ts';
import { failedOnInput, outcomeOf, TransformFailure } from '../engine/sandbox/call-outcome.ts';
import { mailHooks, pushTo, startupSynced } from './helpers/gmail-binary.ts';
import { type GmailStandIn, startGmailStandIn } from './helpers/gmail-stand-in.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { until } from './helpers/signed-http.ts';

const PUSH_TOKEN = 'transform-block-push-token-0123456789';
let gmail: GmailStandIn | undefined;
let server: TestServer | undefined;
const temp = tempDir();
afterEach(async () => {
  await server?.close();
  await gmail?.close();
  temp.cleanup();
});

const TRANSFORM = `export default ({ payload }) => {
  const m = payload.messages[0];
  if (m.subject.includes('boom')) throw new Error('unexpected subject');
  if (m.subject.includes('spin')) for (;;) {}
  if (m.subject.includes('hoard')) { const kept = []; for (;;) kept.push(new Array(1e5).fill(1.5)); }
  return { message: 'Mail from ' + m.from + ': ' + m.subject };
};`;

it.each(['boom', 'spin', 'hoard'])(
  'a mail the transform fails on (%s) is skipped and shown; the mail after it runs',
  async (subject) => {
    const root = path.join(temp.dir, 'hooks', 'transforms');
    mkdirSync(root, { recursive: true });
    writeFileSync(path.join(root, 'mail.js'), TRANSFORM);
    gmail = await startGmailStandIn();
    server = await startTestServer(
      {
        hooks: {
          ...mailHooks(gmail, { push: { mode: 'token' }, pushToken: PUSH_TOKEN }),
          mappings: [
            { id: 'my-gmail', match: { path: 'gmail' }, transform: { module: 'mail.js' } },
          ],
        },
      },
      { dataDir: temp.dir },
    );
    const running = server;
    const g = gmail;
    await startupSynced(running);
    const push = (id: string) => pushTo(running, id, g.historyId(), { 'x-gog-token': PUSH_TOKEN });
    const bad = g.addMessage({ from: 'attacker@example.com', subject, text: 'x' });
    const good = g.addMessage({ from: 'friend@example.com', subject: 'Lunch?', text: 'y' });
    const ran = async () =>
      (await running.store.listActions({ limit: 100 })).map(
        (a) => a.action.verification?.deliveryId,
      );
    // A throw is skipped at once; a loop (out of time, which a loaded host can cause too) and a
    // memory bomb (out of memory, which another mapping's state can cause too) at the third
    // sync in a row that meets it. Each push asks for a sync.
    for (let i = 1; i <= 3 && !(await ran()).includes(good); i++) {
      const before = running.mail?.state().lastSyncAtMs ?? 0;
      expect(await push(`p-${i}`)).toBe(204);
      await until(
        'the sync it asked for',
        () => (running.mail?.state().lastSyncAtMs ?? 0) > before,
      );
      await running.mail?.sync.idle();
    }
    await until('the good mail ran', async () => (await ran()).includes(good), 20_000);
    expect(await ran()).not.toContain(bad);
    expect(running.mail?.state().lastError).toContain(`message ${bad} skipped: transform_`);
  },
  40_000,
);

it("only a failure of the transform on its input counts as the message's", () => {
  const answer = (kind: string) =>
    outcomeOf('m', { type: 'result', id: 1, failure: { kind, message: 'x' } } as never);
  expect(['threw', 'output', 'memory'].map((kind) => failedOnInput(answer(kind)))).toEqual([
    true,
    true,
    // The isolate's memory is every mapping's: another's state can fill it.
    false,
  ]);
  expect(failedOnInput(answer('timeout'))).toBe(false);
  expect(failedOnInput(answer('unavailable'))).toBe(false);
  expect(failedOnInput(new HookError('transform_failed', 'the transform process stopped'))).toBe(
    false,
  );
  expect(failedOnInput(new HookError('transform_invalid_output'))).toBe(true);
});

it("the mark is the failure's reason, carried by the error as data; a caller never sees it", () => {
  const thrown = outcomeOf('m', {
    type: 'result',
    id: 1,
    failure: { kind: 'threw', message: 'x' },
  } as never);
  expect(thrown).toBeInstanceOf(TransformFailure);
  expect((thrown as TransformFailure).reason).toBe('threw');
  // Built anywhere, not only by outcomeOf: the reason decides, not where the object came from.
  expect(failedOnInput(new TransformFailure('transform_failed', 'x', 'threw'))).toBe(true);
  expect(failedOnInput(new TransformFailure('transform_failed', 'x', 'memory'))).toBe(false);
  expect(failedOnInput(new TransformFailure('transform_failed', 'x', 'crash'))).toBe(false);
  expect(failedOnInput(new TransformFailure('transform_timeout', 'x', 'timeout'))).toBe(false);
  expect((thrown as TransformFailure).toBody()).toEqual({
    ok: false,
    error: { code: 'transform_failed', message: 'Transform of mapping "m" failed.' },
  });
});

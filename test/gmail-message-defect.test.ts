/**
 * A defect in reading one message's text (anything that throws on a hostile message) must not
 * hold the mailbox: the message is announced without its body when only the body could not be
 * read, and skipped with its reason when nothing could, so the syncs after it go on. The
 * defect is stood in for by a message whose parts throw when looked at (a Gmail answer is
 * parsed JSON, which cannot; the text reader is what is under test).
 */
import { expect, it } from 'vitest';
import type { GmailApi } from '../engine/gmail/api.ts';
import { createMailSource } from '../engine/gmail/mail-source.ts';

const SETTINGS = { label: 'INBOX', includeBody: true, maxBytes: 20_000 };

/** An object whose listed keys throw when looked at. */
function throwingOn(target: Record<string, unknown>, keys: readonly string[]): object {
  return new Proxy(target, {
    getOwnPropertyDescriptor(object, key) {
      if (keys.includes(String(key))) throw new Error('a defect in reading the message');
      return Reflect.getOwnPropertyDescriptor(object, key);
    },
  });
}

function sourceOf(resource: unknown) {
  const api = {
    getMessage: async () => ({ kind: 'ok', value: resource }),
  } as unknown as GmailApi;
  return createMailSource(api, SETTINGS);
}

const HEADERS = [
  { name: 'From', value: 'a@example.com' },
  { name: 'Subject', value: 'Build failed' },
];

it('a message whose body cannot be read is announced from its headers and snippet', async () => {
  const payload = throwingOn({ mimeType: 'text/plain', headers: HEADERS, parts: [] }, [
    'parts',
    'body',
    'mimeType',
  ]);
  const resource = { id: 'm1', snippet: 'the build broke', internalDate: '1', payload };
  const got = await sourceOf(resource).message('m1');
  expect(got).toMatchObject({
    kind: 'ok',
    value: { id: 'm1', from: 'a@example.com', subject: 'Build failed', snippet: 'the build broke' },
  });
  expect((got as { value: { body?: string } }).value.body).toBeUndefined();
});

it('a message that cannot be read at all is skipped with its reason, not failed for ever', async () => {
  const resource = throwingOn({ id: 'm2', snippet: 'x' }, ['payload']);
  expect(await sourceOf(resource).message('m2')).toEqual({
    kind: 'failed',
    reason: 'its text could not be read',
  });
});

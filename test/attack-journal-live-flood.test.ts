/**
 * Attack: a flood of refused requests (about a thousand a second) kept the live feed busy
 * with one write per request to every stream: each subscriber (the console's tab, a script)
 * got a thousand events a second, each its own write and its own wake-up. The feed now
 * passes them on in batches, one write per short interval, and loses or reorders none.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestFinished } from '../engine/observe/events.ts';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { answeredExchange, refused } from './helpers/journal-records.ts';
import { pipelined } from './helpers/raw-http.ts';
import { waitFor } from './helpers/runtime.ts';

/** A raw /api/stream reader: each chunk of the chunked answer is one write of the server's. */
type StreamReader = { writes: () => string[]; ids: () => string[]; close: () => void };

function readStream(adminUrl: string): Promise<StreamReader> {
  const { hostname, port } = new URL(adminUrl);
  const socket = connect(Number(port), hostname);
  let raw = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    raw += chunk;
  });
  socket.on('error', () => undefined);
  socket.write(
    'GET /api/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
      `Authorization: Bearer ${ADMIN_TOKEN}\r\n\r\n`,
  );
  /** The chunks with events in them, as the server wrote them. */
  const writes = () => {
    const out: string[] = [];
    let at = raw.indexOf('\r\n\r\n') + 4;
    for (;;) {
      const lineEnd = raw.indexOf('\r\n', at);
      if (at < 4 || lineEnd < 0) break;
      const size = Number.parseInt(raw.slice(at, lineEnd), 16);
      if (!(size > 0) || raw.length < lineEnd + 2 + size + 2) break;
      const data = raw.slice(lineEnd + 2, lineEnd + 2 + size);
      if (data.includes('data: ')) out.push(data);
      at = lineEnd + 2 + size + 2;
    }
    return out;
  };
  const ids = () =>
    [
      ...writes()
        .join('')
        .matchAll(/^data: (.*)$/gm),
    ].map((m) => (JSON.parse(m[1] as string) as { id: string }).id);
  return waitFor('the stream to open', () => (raw.includes(': live') ? true : undefined)).then(
    () => ({ writes, ids, close: () => socket.destroy() }),
  );
}

/** A refused request as the handler publishes it. */
function refusal(i: number) {
  return refused(answeredExchange('/hooks/wake', { hook: `guess-${i}` }));
}

let stack: AdminStack;
beforeAll(async () => {
  stack = await startAdminStack({}, { admin: { recentRequests: 10_000 } });
}, 60_000);
afterAll(async () => {
  await stack?.stop();
});

describe('attack: a flood of refusals written to the live feed one by one', () => {
  it('a burst of 500 requests reaches a stream in a few writes, every one, in order', async () => {
    const reader = await readStream(stack.admin.url);
    try {
      for (let i = 0; i < 500; i++) requestFinished.publish(refusal(i));
      const sent = stack.journal
        .list()
        .slice(0, 500)
        .map((r) => r.id)
        .reverse();
      await waitFor('every event', () => (reader.ids().length >= 500 ? true : undefined));
      expect(reader.ids()).toEqual(sent);
      expect(reader.writes().length).toBeLessThanOrEqual(3);
    } finally {
      reader.close();
    }
  });

  it('refusals over HTTP reach every stream, none lost, duplicated or reordered', async () => {
    const readers = await Promise.all([readStream(stack.admin.url), readStream(stack.admin.url)]);
    try {
      const requests = Array.from(
        { length: 300 },
        (_, i) =>
          `POST ${stack.hooksPath}/wake HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong\r\n` +
          `Content-Type: application/json\r\nContent-Length: 2\r\n${i === 299 ? 'Connection: close\r\n' : ''}\r\n{}`,
      );
      await pipelined(stack.hooksUrl, requests);
      const answered = stack.journal
        .list()
        .slice(0, 300)
        .map((r) => r.id)
        .reverse();
      for (const reader of readers) {
        await waitFor('every event', () => (reader.ids().length >= 300 ? true : undefined));
        expect(reader.ids()).toEqual(answered);
      }
    } finally {
      for (const reader of readers) reader.close();
    }
  });
});

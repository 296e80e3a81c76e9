/**
 * Answers written once shutdown began tell the client the connection closes
 * (one `connection: close` header, whatever the answer), and the connection
 * does close: no keep-alive request reaches a server that is stopping.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import { waitFor } from './helpers/runtime.ts';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop().catch(() => undefined);
});

/** A raw keep-alive connection: the headers and the first half of a body go out at once. */
async function halfSent(server: TestServer, body: string) {
  const { port } = new URL(server.url);
  const socket: Socket = connect(Number(port), '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  let received = '';
  let closed = false;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    received += chunk;
  });
  socket.on('close', () => {
    closed = true;
  });
  const half = body.slice(0, 5);
  socket.write(
    `POST /hooks/wake HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Connection: keep-alive\r\n\r\n${half}`,
  );
  return {
    finish: () => socket.write(body.slice(5)),
    received: () => received,
    closed: () => closed,
  };
}

function closeHeaders(raw: string): string[] {
  const head = raw.split('\r\n\r\n')[0] ?? '';
  return head.split('\r\n').filter((line) => /^connection:/i.test(line));
}

describe('answers during shutdown', () => {
  for (const [what, body, status] of [
    ['an accepted wake', JSON.stringify({ text: 'late but accepted' }), 200],
    ['a refused body (bad JSON)', '{"text": oops', 400],
  ] as const) {
    it(`${what} says connection: close once, and the connection closes`, async () => {
      const server = await startTestServer();
      servers.push(server);
      let started = 0;
      const onStart = () => {
        started++;
      };
      subscribe('http.server.request.start', onStart);
      const client = await halfSent(server, body);
      // The request is in flight (its body half read) when shutdown begins.
      await waitFor('the request to reach the server', () => started === 1);
      unsubscribe('http.server.request.start', onStart);
      const stopping = server.stop();
      client.finish();
      await waitFor('the answer', () => client.received().includes('\r\n\r\n'));
      expect(client.received()).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(closeHeaders(client.received())).toEqual(['connection: close']);
      await waitFor('the connection to close', () => client.closed());
      await stopping;
    });
  }
});

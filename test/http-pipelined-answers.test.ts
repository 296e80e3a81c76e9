/**
 * Requests pipelined on one keep-alive connection, refusals among them: a
 * refusal settled before the body is answered with the rest of its
 * event-loop turn rather than from its own callback, so these check that
 * every request still gets its own answer, in the order sent, and that only
 * the accepted one is stored.
 */
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planParserRefusal } from '../engine/ingress/parser-refusals.ts';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import { readLogLines } from './helpers/log-lines.ts';
import { parseAnswers, pipelined } from './helpers/raw-http.ts';
import { waitFor } from './helpers/runtime.ts';

const BODY = '{"text":"pipelined"}';

function post(path: string, token: string, close = false): string {
  return (
    `POST ${path} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${token}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${BODY.length}\r\n` +
    `${close ? 'Connection: close\r\n' : ''}\r\n${BODY}`
  );
}

describe('requests pipelined on one connection', () => {
  let server: TestServer;
  beforeAll(async () => {
    // Far from the lockout: every wrong token here is a 401, never a 429.
    server = await startTestServer({ hooks: { authRateLimit: { maxFailures: 1_000 } } });
  });
  afterAll(() => server.stop());

  it('refusals and an accepted request are each answered, in the order sent', async () => {
    const text = await pipelined(server.url, [
      post('/hooks/wake', 'wrong-token'),
      post('/hooks/nowhere', TOKEN),
      post('/hooks/wake', TOKEN),
      post('/hooks/wake', 'wrong-token', true),
    ]);
    const got = parseAnswers(text);
    expect(got.map((a) => a.status)).toEqual([401, 404, 200, 401]);
    expect(JSON.parse(got[0]?.body ?? '{}').error.code).toBe('unauthorized');
    expect(JSON.parse(got[1]?.body ?? '{}').error.code).toBe('unknown_hook');
    const accepted = JSON.parse(got[2]?.body ?? '{}') as { id: string };
    const stored = await server.store.listActions({ limit: 10 });
    expect(stored.map((row) => row.action.id)).toEqual([accepted.id]);
  });

  it('fifty refusals sent at once get fifty 401s', async () => {
    const requests = Array.from({ length: 50 }, (_, i) => post('/hooks/wake', 'bad', i === 49));
    const got = parseAnswers(await pipelined(server.url, requests));
    expect(got).toHaveLength(50);
    expect(got.every((a) => a.status === 401)).toBe(true);
  });

  it('a pipelined flood of refusals on one connection is not answered in one event-loop turn', async () => {
    // Held answers are not written yet, so node:http would not pause the socket: without a
    // bound on them, one connection's burst of refusals was answered as one batch of thousands.
    let inTurn = 0;
    let most = 0;
    let running = true;
    const count = () => {
      inTurn++;
    };
    server.server.on('request', count);
    (function tick() {
      most = Math.max(most, inTurn);
      inTurn = 0;
      if (running) setImmediate(tick);
    })();
    try {
      const n = 50_000;
      const one =
        'POST /hooks/wake HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer bad\r\nContent-Length: 0\r\n\r\n';
      const last = one.replace('Host: a\r\n', 'Host: a\r\nConnection: close\r\n');
      const text = await pipelined(server.url, [one.repeat(n - 1), last]);
      // 401s, then 429s once the address is locked: every request answered.
      expect(text.match(/HTTP\/1\.1 4(01|29) /g)?.length).toBe(n);
      expect(most).toBeLessThan(4_000);
    } finally {
      running = false;
      server.server.off('request', count);
    }
  });
});

describe('a CONNECT pipelined behind requests whose answers are still to come', () => {
  it.each([
    ['a wrong token', 'wrong-token', 401],
    ['an accepted wake', TOKEN, 200],
  ])(
    'behind %s: that request is answered first, then the CONNECT, and the server goes on serving',
    async (_name, token, status) => {
      const logFile = path.join(mkdtempSync(path.join(tmpdir(), 'hookgate-connect-')), 'log');
      const server = await startTestServer(
        { hooks: { authRateLimit: { maxFailures: 1_000 } } },
        { logFile },
      );
      try {
        const got = parseAnswers(
          await pipelined(server.url, [
            post('/hooks/wake', token),
            'CONNECT x:1 HTTP/1.1\r\nHost: x:1\r\n\r\n',
          ]),
        );
        expect(got.map((a) => a.status)).toEqual([status, 404]);
        // Before, node threw from its parser's callback (the socket still held the first
        // answer), which ended the process.
        const after = await server.post('wake', { text: 'still here' });
        expect(after.status).toBe(200);
        // The CONNECT ran the stages once, and nothing failed on the way. Its log line is
        // written after its answer went out, so it is waited for, not expected at once.
        const notFound = (lines: Array<Record<string, unknown>>) =>
          lines.filter((l) => l.msg === 'request' && l.status === 404);
        const lines = await waitFor('the CONNECT logged', () => {
          const read = readLogLines(logFile);
          return notFound(read).length > 0 && read;
        });
        expect(notFound(lines)).toHaveLength(1);
        expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
      } finally {
        await server.stop();
      }
    },
  );
});

describe('a refusal settled before shutdown began', () => {
  it('keeps the connection for the request pipelined behind it, which is answered and stored', async () => {
    const server = await startTestServer({});
    let closing: Promise<void> | undefined;
    // Shutdown begins in the turn the requests arrive, after the refusal was settled.
    server.server.once('request', () => {
      closing = server.stop();
    });
    const text = await pipelined(server.url, [
      post('/hooks/wake', 'wrong-token'),
      post('/hooks/wake', TOKEN),
    ]);
    await closing;
    const got = parseAnswers(text);
    expect(got.map((a) => a.status)).toEqual([401, 200]);
  });
});

describe('a message the parser refuses on a connection that still owes answers', () => {
  let server: TestServer;
  beforeAll(async () => {
    // The shortest request timeout: Node's own backstop (5 s after it) ends a trickled body.
    server = await startTestServer({
      server: { requestTimeoutMs: 100, headersTimeoutMs: 100 },
      hooks: { authRateLimit: { maxFailures: 1_000 } },
    });
  });
  afterAll(() => server.stop());

  it('a valid wake with garbage pipelined behind it: the wake gets its 200 first, then the garbage its 400, and the wake is stored once', async () => {
    const wake =
      'POST /hooks/wake HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ' +
      `${TOKEN}\r\nContent-Type: application/json\r\nIdempotency-Key: k1\r\n` +
      `Content-Length: ${BODY.length}\r\n\r\n${BODY}`;
    const raw = await pipelined(server.url, [wake, 'GARBAGE\r\n\r\n']);
    const got = parseAnswers(raw);
    expect(got.map((a) => a.status)).toEqual([200, 400]);
    // The status line's reason phrase is HTTP's, the code is in the JSON body.
    expect(raw).toContain('HTTP/1.1 400 Bad Request\r\n');
    const accepted = JSON.parse(got[0]?.body ?? '{}') as { id: string };
    expect(JSON.parse(got[1]?.body ?? '{}').error.code).toBe('bad_request');
    const stored = await server.store.listActions({ limit: 10 });
    expect(stored.map((row) => row.action.id)).toEqual([accepted.id]);
  });

  it('a 401 already sent while its body trickles in past the request timeout: no second answer (no 408) for the same request, the connection is closed', async () => {
    const { hostname, port } = new URL(server.url);
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname);
      const parts: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => parts.push(chunk));
      // Closed with the trickle's bytes unread, the server's end may reset rather than end the
      // connection: closed either way ('close' follows), the 401 read long before.
      socket.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code !== 'ECONNRESET' && err.code !== 'EPIPE') reject(err);
      });
      socket.write(
        'POST /hooks/wake HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer wrong\r\n' +
          'Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n',
      );
      // One byte every 200 ms: the body never completes before Node's request timeout.
      const trickle = setInterval(() => socket.write('a'), 200);
      socket.on('close', () => {
        clearInterval(trickle);
        resolve(Buffer.concat(parts).toString('latin1'));
      });
    });
    expect(parseAnswers(text).map((a) => a.status)).toEqual([401]);
  });
});

describe('what becomes of a message the parser refused', () => {
  it.each([
    [0, false, 'answer'],
    [2, false, 'answer-after'],
    [0, true, 'close'],
    [1, true, 'close-after'],
  ] as const)(
    'with %i answers owed, the last request incomplete %s: %s',
    (open, incomplete, plan) => {
      expect(planParserRefusal(open, incomplete)).toBe(plan);
    },
  );
});

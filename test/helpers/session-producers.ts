/**
 * Producers for the kill test: keep-alive HTTP clients sending per-session
 * sequences of agent requests. A session's request k+1 is sent only after
 * k's 200, which defines the order the store must keep. Every request
 * carries `Idempotency-Key: s<session>:<k>`; on a connection error, a 5xx
 * or a 429 the same request is sent again with the same key, as a careful
 * sender does, until it is answered 200 or the producers give up.
 */
import { Agent, request } from 'node:http';
import type { AckedRequest } from './kill-check.ts';

export type ProducerOptions = {
  /** Base URL (the balancer's). */
  url: string;
  token: string;
  producers: number;
  sessions: number;
  /** No new request is started after this long; one being retried goes on. */
  durationMs: number;
  /** No new request is started once this many were started (bounds the work to drain). */
  maxRequests: number;
  /** A request not answered 200 by this long after the start is abandoned (not acknowledged). */
  giveUpMs: number;
  /** Told of each acknowledgement, with how many there were so far. */
  onAck?: (count: number) => void;
};

export type ProducerReport = {
  acked: AckedRequest[];
  /** Requests sent again after a connection error, a 5xx or a 429. */
  retries: number;
  connectionErrors: number;
  serverErrors: number;
  /** Acknowledged after at least one retry. */
  ackedAfterRetry: number;
  /** Any other answer (a 4xx): a test fails on these. */
  unexpected: string[];
  /** Requests still unanswered when the producers gave up. */
  abandoned: number;
  elapsedMs: number;
  latenciesMs: number[];
};

/** The session key of session number s. */
export const sessionKey = (session: number): string => `hook:s${session}`;

type Answer = { status: number; body: string } | { error: string };

function post(agent: Agent, url: URL, body: string, key: string, token: string): Promise<Answer> {
  return new Promise((resolve) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          authorization: `Bearer ${token}`,
          'idempotency-key': key,
        },
        timeout: 15_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', (err) => resolve({ error: err.message }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (err) => resolve({ error: err.message }));
    req.end(body);
  });
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Run the producers until their time is up and return what was acknowledged. */
export async function runProducers(options: ProducerOptions): Promise<ProducerReport> {
  const target = new URL('/hooks/agent', options.url);
  const started = Date.now();
  const report: ProducerReport = {
    acked: [],
    retries: 0,
    connectionErrors: 0,
    serverErrors: 0,
    ackedAfterRetry: 0,
    unexpected: [],
    abandoned: 0,
    elapsedMs: 0,
    latenciesMs: [],
  };

  let startedRequests = 0;

  async function send(agent: Agent, session: number, k: number): Promise<boolean> {
    const key = `s${session}:${k}`;
    const body = JSON.stringify({ message: key, sessionKey: sessionKey(session) });
    const first = Date.now();
    for (let attempt = 0; ; attempt++) {
      if (Date.now() - started > options.giveUpMs) {
        report.abandoned++;
        return false;
      }
      if (attempt > 0) report.retries++;
      const answer = await post(agent, target, body, key, options.token);
      if ('status' in answer && answer.status === 200) {
        const { runId } = JSON.parse(answer.body) as { runId: string };
        report.acked.push({ session: sessionKey(session), k, runId });
        options.onAck?.(report.acked.length);
        report.latenciesMs.push(Date.now() - first);
        if (attempt > 0) report.ackedAfterRetry++;
        return true;
      }
      if ('error' in answer) report.connectionErrors++;
      else if (answer.status >= 500) report.serverErrors++;
      else if (answer.status !== 429) {
        report.unexpected.push(`${key}: ${answer.status} ${answer.body.slice(0, 200)}`);
        return false;
      }
      // Back off a little: the instance or the database is gone for a moment.
      await pause(Math.min(25 * 2 ** attempt, 500));
    }
  }

  async function producer(index: number): Promise<void> {
    const mine: number[] = [];
    for (let s = index; s < options.sessions; s += options.producers) mine.push(s);
    if (mine.length === 0) return;
    // One keep-alive connection per producer, as a sender's HTTP client keeps.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const next = new Map(mine.map((s) => [s, 0]));
    try {
      for (let turn = 0; Date.now() - started < options.durationMs; turn++) {
        if (startedRequests++ >= options.maxRequests) return;
        const session = mine[turn % mine.length] as number;
        const k = next.get(session) ?? 0;
        // A refused (4xx, reported) or abandoned request ends this producer: a gap in its order.
        if (!(await send(agent, session, k))) return;
        next.set(session, k + 1);
      }
    } finally {
      agent.destroy();
    }
  }

  await Promise.all(Array.from({ length: options.producers }, (_, i) => producer(i)));
  report.elapsedMs = Date.now() - started;
  return report;
}

/**
 * A test agent for the `http` runner on 127.0.0.1 that the test steers: a
 * run whose message contains HOLD is held (no answer) until `release()`, one
 * with BUSY is answered 503 with a long Retry-After (the work did not happen:
 * the runtime retries it after a backoff), any other is answered at once with
 * `done: <message>`. Every run is recorded in arrival order, with how many
 * runs of its session were in flight when it arrived.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One run as the agent received it. */
export type GateCall = {
  kind: 'agent' | 'heartbeat';
  runId: string;
  sessionKey: string;
  message: string;
  /** Runs of the same session already in flight when this one arrived (0 when in order). */
  concurrentInSession: number;
};

export type GateAgent = {
  /** The runner URL (`{ kind: 'http', url }`). */
  url: string;
  calls: GateCall[];
  /** Answer the held runs and every later HOLD at once. */
  release(): void;
  close(): Promise<void>;
};

/** Start the agent. */
export async function startGateAgent(): Promise<GateAgent> {
  const calls: GateCall[] = [];
  const held: Array<() => void> = [];
  const inFlight = new Map<string, number>();
  let released = false;

  const answer = (res: ServerResponse, sessionKey: string, status: number, body: unknown) => {
    inFlight.set(sessionKey, (inFlight.get(sessionKey) ?? 1) - 1);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (status === 503) headers['retry-after'] = '3600';
    res.writeHead(status, headers).end(JSON.stringify(body));
  };

  const server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      raw += chunk;
    });
    req.on('end', () => {
      const run = JSON.parse(raw) as Omit<GateCall, 'concurrentInSession'>;
      const running = inFlight.get(run.sessionKey) ?? 0;
      inFlight.set(run.sessionKey, running + 1);
      calls.push({
        kind: run.kind,
        runId: run.runId,
        sessionKey: run.sessionKey,
        message: run.message,
        concurrentInSession: running,
      });
      if (run.message.includes('BUSY')) {
        answer(res, run.sessionKey, 503, { error: 'busy' });
      } else if (run.message.includes('HOLD') && !released) {
        held.push(() => answer(res, run.sessionKey, 200, { reply: `done: ${run.message}` }));
      } else {
        answer(res, run.sessionKey, 200, { reply: `done: ${run.message}` });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/run`,
    calls,
    release() {
      released = true;
      for (const send of held.splice(0)) send();
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The failed-auth limiter as the request path uses it: a success writes
 * nothing to the limiter unless this instance counted a failure, only
 * failures wait on a write, and a limiter store that is down never changes
 * the answer (401 or 403 still goes out) and is logged once per outage.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createTokenCheck } from '../engine/auth.ts';
import { HookError } from '../engine/errors.ts';
import { createAuthenticateHeaders } from '../engine/ingress/authenticate.ts';
import { type Exchange, newExchange } from '../engine/ingress/exchange.ts';
import { createSubscribe } from '../engine/ingress/handshakes.ts';
import { headerValues } from '../engine/ingress/request-source.ts';
import type { CompiledRoute, RouteGate } from '../engine/ingress/routes.ts';
import {
  type AuthFailureLimiter,
  createMemoryLimiter,
  reportingStoreErrors,
} from '../engine/rate-limit.ts';
import { contractSettings } from './limiter-contract.ts';

const TOKEN = 'right-token';
const CLIENT = '203.0.113.9';

function exchange(gate: Partial<RouteGate>, headers: string[], url = '/hooks/wake'): Exchange {
  const x = newExchange(
    {
      method: url.includes('?') ? 'GET' : 'POST',
      url,
      headers: {},
      rawHeaders: headers,
      remoteAddress: CLIENT,
      readBody: () => Promise.resolve(Buffer.alloc(0)),
    },
    headerValues(headers),
  );
  const full: RouteGate = {
    scheme: 'token',
    token: true,
    verifier: undefined,
    verifyToken: undefined,
    hidden: [],
    ...gate,
  };
  // Only the route's gate is read by these stages.
  x.route = { name: 'wake', gate: full } as unknown as CompiledRoute;
  x.limiterKey = CLIENT;
  return x;
}

const right = () => exchange({}, ['authorization', `Bearer ${TOKEN}`]);
const wrong = () => exchange({}, ['authorization', 'Bearer guess']);

/** The memory limiter, with its writes counted. */
function recording() {
  const inner = createMemoryLimiter(contractSettings);
  const writes: string[] = [];
  const limiter: AuthFailureLimiter = {
    ...inner,
    recordFailure(client, nowMs) {
      writes.push('recordFailure');
      return inner.recordFailure(client, nowMs);
    },
    reset(client) {
      writes.push('reset');
      return inner.reset(client);
    },
  };
  return { limiter, writes };
}

/** A limiter whose store refuses every write until told it is back. */
function flakyStore() {
  const inner = createMemoryLimiter(contractSettings);
  const store = { down: true };
  const refuse = () => Promise.reject(new Error('connection refused'));
  const limiter: AuthFailureLimiter = {
    ...inner,
    recordFailure: (client, nowMs) => (store.down ? refuse() : inner.recordFailure(client, nowMs)),
    reset: (client) => (store.down ? refuse() : inner.reset(client)),
  };
  return { limiter, store };
}

function capturedLog() {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

/** The refusal a stage settled with: returned (at once or later), or thrown. */
async function refusal(step: unknown): Promise<HookError> {
  let settled: unknown;
  try {
    settled = await step;
  } catch (err) {
    settled = err;
  }
  if (settled instanceof HookError) return settled;
  throw new Error('the stage did not refuse');
}

describe('the request path and the failed-auth limiter', () => {
  it('a success with no failure counted writes nothing and answers without waiting', () => {
    const { limiter, writes } = recording();
    const stage = createAuthenticateHeaders({ limiter, tokenMatches: createTokenCheck(TOKEN) });
    for (let i = 0; i < 5; i++) expect(stage(right())).toBeUndefined();
    expect(writes).toEqual([]);
  });

  it('a success after a failure clears the count once, then writes nothing again', async () => {
    const { limiter, writes } = recording();
    const stage = createAuthenticateHeaders({ limiter, tokenMatches: createTokenCheck(TOKEN) });
    expect((await refusal(stage(wrong()))).status).toBe(401);
    expect((await refusal(stage(wrong()))).status).toBe(401);
    await stage(right());
    expect(stage(right())).toBeUndefined();
    expect(writes).toEqual(['recordFailure', 'recordFailure', 'reset']);
    // The count was cleared: two more failures do not reach the three that lock.
    await refusal(stage(wrong()));
    await refusal(stage(wrong()));
    expect(limiter.lockedFor(CLIENT, Date.now())).toBe(0);
  });

  it('a refused write still answers 401, logged once per outage', async () => {
    const { limiter: flaky, store } = flakyStore();
    const { logger, lines } = capturedLog();
    const limiter = reportingStoreErrors(flaky, logger);
    const stage = createAuthenticateHeaders({ limiter, tokenMatches: createTokenCheck(TOKEN) });
    for (let i = 0; i < 10; i++) expect((await refusal(stage(wrong()))).status).toBe(401);
    expect(lines.map((line) => line.msg)).toEqual([
      'failed-auth limiter store unreachable: failures are counted by this instance alone until it answers',
    ]);
    store.down = false;
    await refusal(stage(wrong()));
    await refusal(stage(wrong()));
    expect(lines.map((line) => line.msg).slice(1)).toEqual([
      'failed-auth limiter store reachable again',
    ]);
    store.down = true;
    await refusal(stage(wrong()));
    expect(lines).toHaveLength(3);
  });

  it('a wrong verify token is still 403 when the write is refused', async () => {
    const { limiter: flaky } = flakyStore();
    const limiter = reportingStoreErrors(flaky, capturedLog().logger);
    const stage = createSubscribe(limiter);
    const x = exchange(
      { verifyToken: (presented) => presented === 'v' },
      [],
      '/hooks/wake?hub.mode=subscribe&hub.verify_token=guess&hub.challenge=c',
    );
    x.query = 'hub.mode=subscribe&hub.verify_token=guess&hub.challenge=c';
    const err = await refusal(stage(x));
    expect(err.code).toBe('verify_token_mismatch');
  });
});

/**
 * Expensive console queries: a run-state filter over a full journal of
 * fanned-out requests (thousands of records, tens of actions each) must not
 * hold the event loop while the store reads the states, so the probes, the
 * hooks and the other admin calls are answered meanwhile. Real journal, real
 * embedded runtime store, real admin listener over HTTP.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RequestJournal } from '../engine/admin/journal.ts';
import { runsView } from '../engine/admin/runs-view.ts';
import { type AdminListener, startAdmin } from '../engine/admin/server.ts';
import type { Exchange } from '../engine/ingress/exchange.ts';
import { newExchange } from '../engine/ingress/exchange.ts';
import { createLogger } from '../engine/log.ts';
import { openSqliteStores, type SqliteStores } from './helpers/sqlite-stores.ts';

const TOKEN = 'attack-admin-queries-token';
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** An answered request whose mapping fanned out into `count` wake actions. */
function fannedOut(count: number) {
  const exchange: Exchange = newExchange(
    {
      method: 'POST',
      url: '/hooks/github',
      headers: {},
      rawHeaders: [],
      remoteAddress: '127.0.0.1',
      readBody: () => Promise.resolve(Buffer.alloc(0)),
    },
    () => [],
  );
  const actions = Array.from({ length: count }, (_, i) => ({
    kind: 'wake' as const,
    id: `act-${exchange.id}-${i}`,
    hook: 'github',
    receivedAt: '',
    client: '',
    requestId: exchange.id,
    untrusted: true,
    text: 'commit',
    mode: 'now' as const,
  }));
  Object.assign(exchange, {
    hook: 'github',
    client: '127.0.0.1',
    accepted: { actions, response: null },
  });
  return { exchange, status: 200, durationMs: 1, replayed: false };
}

async function listener(
  journal: RequestJournal,
  runs: ReturnType<typeof runsView>,
): Promise<AdminListener> {
  const admin = await startAdmin(
    {
      host: '127.0.0.1',
      port: 0,
      token: TOKEN,
      logger: createLogger('silent'),
      maxBodyBytes: () => 1024,
      caps: { maxConnections: 100, maxConnectionsPerAddress: 100, trustedProxies: [] },
    },
    {
      readiness: async () => ({ ready: true, checks: {} }),
      journal,
      runs,
      dryRun: () => Promise.reject(new Error('no dry runs here')),
    },
  );
  closers.push(() => admin.close());
  return admin;
}

describe('attack: an expensive console query', () => {
  it('a run-state filter over a full journal of fanned-out requests does not stall the event loop', async () => {
    const stores: SqliteStores = await openSqliteStores('hookgate-atk-queries-');
    closers.push(() => stores.close());
    const journal = new RequestJournal({
      recentRequests: 3000,
      keepPayloads: false,
      maxBodyBytes: () => 1024,
    });
    for (let i = 0; i < 3000; i++) journal.add(fannedOut(64) as never);
    const view = runsView(stores.runtime);
    let admin: AdminListener | undefined;
    const order: string[] = [];
    let probe: Promise<void> | undefined;
    // The first read of run states sends a probe: it must be answered before the list is.
    const runs = {
      ...view,
      states(ids: readonly string[]) {
        probe ??= fetch(`${admin?.url}/healthz`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        }).then(async (res) => {
          expect(res.status).toBe(200);
          await res.arrayBuffer();
          order.push('probe');
        });
        return view.states(ids);
      },
    };
    admin = await listener(journal, runs);
    const list = await fetch(`${admin.url}/api/requests?state=dead`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    }).then(async (res) => {
      const body = (await res.json()) as { requests: unknown[] };
      order.push('list');
      return { status: res.status, body };
    });
    await probe;
    expect(list).toEqual({ status: 200, body: { requests: [] } });
    expect(order).toEqual(['probe', 'list']);
  });
});

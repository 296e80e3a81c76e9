/**
 * Hostile copies behind a held key: a request that reuses a key an earlier
 * request still holds waits for that request's answer. The holder may take
 * seconds (a transform call), and copies cost their sender only their bytes,
 * pipelined on one connection or spread over many. What waits is bounded
 * (copies past it are refused 503 at once), and a waiting copy holds its raw
 * body, not its parsed tree.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createLedger,
  type KeyClaim,
  MAX_KEY_WAITERS,
  MAX_KEY_WAITING_BYTES,
} from '../engine/dispatcher.ts';
import type { HookError } from '../engine/errors.ts';
import type { Exchange } from '../engine/ingress/exchange.ts';
import { createReplayCheck } from '../engine/ingress/replay.ts';
import { openSqliteStore } from '../engine/store/sqlite/action-store.ts';
import { startTestServer, TOKEN, type TestServer, tempDir } from './helpers/hookgate.ts';
import { pipelined } from './helpers/raw-http.ts';
import { waitFor } from './helpers/runtime.ts';
import { type StageTimed, stageTimed } from '../engine/observe/events.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function ledger() {
  const temp = tempDir('hookgate-key-waiters-');
  const store = await openSqliteStore(temp.dir);
  cleanups.push(temp.cleanup, () => store.close());
  return createLedger(store);
}

const claim = (key: string): KeyClaim => ({
  key: `caller:${key}`,
  fingerprint: 'f',
  windowMs: 60_000,
});

/** Whether a promise has settled by the next macrotask. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('copies waiting for a held key', () => {
  it(`${MAX_KEY_WAITERS + 50} copies of one held key: ${MAX_KEY_WAITERS} wait, the rest are refused 503 at once`, async () => {
    const l = await ledger();
    const first = await l.hold([claim('k')]);
    const copies = Array.from({ length: MAX_KEY_WAITERS + 50 }, () =>
      l.hold([claim('k')], { bytes: 10, waits: () => undefined }).then(
        // Each copy holds the key in its turn, and answers at once.
        (held) => {
          held.release();
          return 'waited';
        },
        (err: HookError) => `${err.code} ${err.headers?.['retry-after']}`,
      ),
    );
    expect(await Promise.all(copies.slice(MAX_KEY_WAITERS))).toEqual(
      Array(50).fill('unavailable 1'),
    );
    // The ones within the bound still wait for the first request's answer.
    expect(await settled(copies[MAX_KEY_WAITERS - 1] as Promise<unknown>)).toBe(false);
    first.release();
    expect(new Set(await Promise.all(copies.slice(0, MAX_KEY_WAITERS)))).toEqual(
      new Set(['waited']),
    );
  });

  it('copies of many held keys: their bodies are bounded in all, a lone large one still waits', async () => {
    const l = await ledger();
    const body = 256 * 1024;
    const fits = MAX_KEY_WAITING_BYTES / body;
    const holders = await Promise.all(
      Array.from({ length: fits + 10 }, (_, i) => l.hold([claim(`k${i}`)])),
    );
    const copies = holders.map((_, i) =>
      l.hold([claim(`k${i}`)], { bytes: body, waits: () => undefined }).then(
        () => 'waited',
        (err: HookError) => err.code,
      ),
    );
    expect(await Promise.all(copies.slice(fits))).toEqual(Array(10).fill('unavailable'));
    for (const held of holders) held.release();
    expect(new Set(await Promise.all(copies.slice(0, fits)))).toEqual(new Set(['waited']));
    // With nothing else waiting, a copy larger than the whole bound waits as any other.
    const alone = await l.hold([claim('big')]);
    const big = l.hold([claim('big')], {
      bytes: MAX_KEY_WAITING_BYTES * 2,
      waits: () => undefined,
    });
    expect(await settled(big)).toBe(false);
    alone.release();
    (await big).release();
  });

  it('a copy that waits drops its parsed body, and parses it again when the first stored nothing', async () => {
    const l = await ledger();
    const check = createReplayCheck(l, 32);
    const raw = Buffer.from('{"text":"copy","idempotencyKey":"k"}');
    const payload = JSON.parse(raw.toString()) as Record<string, unknown>;
    const x = {
      route: { keyWindowMs: 60_000, name: 'wake', mappings: [] },
      source: { headers: {} },
      headers: () => [],
      raw,
      format: 'json',
      payload,
      envelope: { hook: 'wake', raw, payload, verification: { scheme: 'token' } },
      log: {},
      cleanup: [],
    } as unknown as Exchange;
    const first = await l.hold([claim('k')]);
    const step = check(x) as Promise<unknown>;
    // While it waits, nothing of the parsed body is held.
    expect(x.payload).toBeUndefined();
    expect(Object.keys(x.envelope?.payload ?? {})).toEqual([]);
    first.release();
    expect(await step).toBeUndefined();
    expect(x.payload).toEqual(payload);
    expect(x.envelope?.payload).toEqual(payload);
    for (const release of x.cleanup) release();
  });
});

describe('pipelined copies behind a slow holder, end to end', () => {
  const temp = tempDir();
  let server: TestServer;
  beforeAll(async () => {
    const root = path.join(temp.dir, 'hooks', 'transforms');
    mkdirSync(root, { recursive: true });
    // An honest transform that takes a while (a large batch, a queue of calls before it).
    writeFileSync(
      path.join(root, 'slow.js'),
      "export default () => { const t = Date.now(); while (Date.now() - t < 4500); return { kind: 'wake', text: 'slow' }; };\n",
    );
    server = await startTestServer(
      {
        hooks: {
          transforms: { cpuTimeoutMs: 5000, deadlineMs: 5000 },
          mappings: [{ id: 'slow', match: { path: 'slow' }, transform: { module: 'slow.js' } }],
        },
      },
      { dataDir: temp.dir },
    );
  });
  afterAll(async () => {
    await server.stop();
    temp.cleanup();
  });

  it('200 pipelined 200 KB copies of a key held by a transform call: those past the bound are refused 503, an ordinary request is answered meanwhile', async () => {
    const body = JSON.stringify({ text: 'w', pad: 'x'.repeat(200_000) });
    const copies = 200;
    const post = (hook: string, json: string, last = false) =>
      `POST /hooks/${hook} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TOKEN}\r\n` +
      `Idempotency-Key: held-by-slow\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(json)}\r\n${last ? 'Connection: close\r\n' : ''}\r\n${json}`;
    // Three slow calls ahead of the holder in the one transform process: the holder holds the
    // key while they run and while it runs (about 18 s), time for the copies to arrive even on
    // a loaded machine (behind the holder alone, 4.5 s, some ran out of it). They are sent
    // first and the holder only once all three are past the replay check (their transform calls
    // queued): sent at once, the holder could overtake them on a loaded machine.
    let queued = 0;
    const onStage = (message: unknown) => {
      const { stage, route } = message as StageTimed;
      if (stage === 'replayCheck' && route === 'slow') queued += 1;
    };
    subscribe(stageTimed.name, onStage);
    let ahead: Promise<Response>[];
    try {
      ahead = [-2, -1, 0].map((n) => server.post('slow', { n }));
      await waitFor('the three slow calls ahead to be queued', () => queued >= 3, 30_000);
    } finally {
      unsubscribe(stageTimed.name, onStage);
    }
    // First on the connection, the holder takes the key; its transform then runs for seconds
    // while the copies behind it arrive.
    const requests = [
      post('slow', '{"n":1}'),
      ...Array.from({ length: copies }, (_, i) => post('wake', body, i === copies - 1)),
    ];
    const answers = pipelined(server.url, requests);
    const ordinary = await server.post('wake', { text: 'beside the copies' });
    expect(ordinary.status).toBe(200);
    const text = await answers;
    for (const res of await Promise.all(ahead)) expect(res.status).toBe(200);
    const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]);
    expect(statuses).toHaveLength(copies + 1);
    expect(statuses[0]).toBe('200');
    // 32 MiB of 200 KB bodies is some 160 copies: those past it did not wait (how many arrive
    // while the holder runs depends on the machine's load; without the bound none is refused).
    const busy = statuses.filter((s) => s === '503').length;
    expect(busy).toBeGreaterThan(0);
    expect(busy).toBeLessThanOrEqual(copies - Math.floor(MAX_KEY_WAITING_BYTES / body.length));
    // The rest waited and were then answered: a key reused for another body is a conflict.
    expect(new Set(statuses.slice(1))).toEqual(new Set(['409', '503']));
    expect(text).toContain('"code":"unavailable"');
  });
});

/**
 * Attacks on the sandbox boundary from inside a transform, end to end: the
 * real server on port 0, real transform processes, real isolated-vm. Each
 * test is named after the attack; each checks that the call fails cleanly
 * (or is contained) and that the server keeps answering.
 */
import { mkdirSync, openSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { type Hookgate, startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import type { AgentAction } from '../schemas/action.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { childrenFromNow } from './helpers/started-children.ts';
import { readLogLines } from './helpers/log-lines.ts';
import { unwrap } from './helpers/wrapped.ts';

// The transform processes this file's supervisors started.
const transformPids = childrenFromNow();

const BOMB = 'export default () => ({ message: String(new Array(1e9).fill(0).length) });';
const FLOOD = `export default ({ payload }) => {
  if (payload.tamper) {
    String.prototype.substring = function () { return String(this); };
    String.prototype.slice = function () { return String(this); };
    Array.prototype.push = function (...items) { for (const item of items) this[this.length] = item; return this.length; };
  }
  const big = 'y'.repeat(100_000);
  for (let i = 0; i < 1000; i++) console.log(big, i);
  return { message: 'flooded' };
};`;
const GOOD = "export default () => ({ message: 'good' });";

async function waitFor(check: () => boolean, what: string): Promise<void> {
  const until = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

type Server = {
  hookgate: Hookgate;
  root: string;
  dir: string;
  post(
    hook: string,
    payload?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> | null }>;
  logLines(): Array<Record<string, unknown>>;
  /** The log's lines once what the logger holds is written: for what must be absent or capped. */
  flushedLogLines(): Promise<Array<Record<string, unknown>>>;
  logBytes(): number;
  content(body: Record<string, unknown> | null): Promise<string | undefined>;
  stop(): Promise<void>;
};

/** A server whose mappings are `<name>` -> `<name>.js` for each module given. */
async function startServer(
  modules: Record<string, string>,
  transforms: Record<string, unknown>,
): Promise<Server> {
  const temp = tempDir();
  const root = path.join(temp.dir, 'hooks', 'transforms');
  for (const [name, source] of Object.entries(modules)) {
    mkdirSync(path.dirname(path.join(root, `${name}.js`)), { recursive: true });
    writeFileSync(path.join(root, `${name}.js`), source);
  }
  const logFile = path.join(temp.dir, 'service.log');
  const raw = {
    server: { host: '127.0.0.1', port: 0 },
    hooks: {
      enabled: true,
      token: TOKEN,
      transforms,
      mappings: Object.keys(modules)
        .filter((name) => !name.startsWith('lib/'))
        .map((name) => ({ id: name, match: { path: name }, transform: { module: `${name}.js` } })),
    },
  };
  const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
  const logger = createLogger('info', openSync(logFile, 'a'));
  const hookgate = await startHookgate(loaded, {
    logger,
    runtime: false,
  });
  const post: Server['post'] = async (hook, payload = {}) => {
    const res = await fetch(`${hookgate.url}/hooks/${hook}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(payload),
    });
    const text = await res.text();
    return {
      status: res.status,
      body: text ? (JSON.parse(text) as Record<string, unknown>) : null,
    };
  };
  return {
    hookgate,
    root,
    dir: temp.dir,
    post,
    logLines: () => readLogLines(logFile),
    async flushedLogLines() {
      await new Promise<void>((resolve, reject) =>
        logger.flush((err) => (err ? reject(err) : resolve())),
      );
      return readLogLines(logFile);
    },
    logBytes: () => statSync(logFile).size,
    async content(body) {
      const rows = await hookgate.store.listActions({ limit: 1000 });
      const action = rows.find((row) => row.action.id === body?.['runId'])?.action as
        | AgentAction
        | undefined;
      return action ? unwrap(action.prompt as string).content : undefined;
    },
    async stop() {
      await hookgate.close();
      temp.cleanup();
    },
  };
}

const codeOf = (body: Record<string, unknown> | null) =>
  (body?.['error'] as { code?: string } | undefined)?.code;

describe('attacks from inside a transform', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startServer(
      {
        good: GOOD,
        stringify: `export default ({ payload }) => {
          const real = JSON.stringify;
          // Only the console drain's text lies: a key holding a backslash (foreign-json.ts).
          const slash = String.fromCharCode(92, 92);
          const drainKey = (value) => value && Array.isArray(value.lines)
            ? '{"lines":[],"dropped":0,"a' + slash + 'b":1}' : real(value);
          const lies = {
            'drain-backslash-key': drainKey,
            lines: () => '{"lines":[null],"dropped":0}',
            number: () => 42,
            undefined: () => undefined,
            throws: () => { throw new Error('no'); },
            huge: () => 'x'.repeat(5_000_000),
            object: () => ({ lines: [null] }),
          };
          JSON.stringify = lies[payload.variant];
          return { message: 'x' };
        };`,
        flood: FLOOD,
        'flood-tampered': FLOOD,
        probe: `export default () => {
          const seen = {};
          for (const name of ['WebAssembly', 'SharedArrayBuffer', 'Atomics']) {
            let viaFunction, viaEval;
            try { viaFunction = Function('return typeof ' + name)(); } catch (e) { viaFunction = e.name; }
            try { viaEval = (0, eval)('typeof ' + name); } catch (e) { viaEval = e.name; }
            seen[name] = [typeof globalThis[name], viaFunction, viaEval].join(',');
          }
          seen.resize = typeof ArrayBuffer.prototype.resize;
          return { message: JSON.stringify(seen) };
        };`,
        'wasm-memory':
          'export default () => { const m = new WebAssembly.Memory({ initial: 1, maximum: 65536 }); m.grow(10000); new Uint8Array(m.buffer).fill(1); return { message: String(m.buffer.byteLength) }; };',
        'shared-buffer':
          'export default () => { const b = new SharedArrayBuffer(1 << 29); new Uint8Array(b).fill(1); return { message: String(b.byteLength) }; };',
        'resizable-buffer':
          'export default () => { const b = new ArrayBuffer(1, { maxByteLength: 2 ** 30 }); const t = b.resize ? (b.resize(2 ** 29), b) : b.transfer(2 ** 29); new Uint8Array(t).fill(1); return { message: String(t.byteLength) }; };',
        swap: "import { word } from './lib/word.js';\nexport default () => ({ message: 'swap ' + word });",
        'lib/word': "export const word = 'inside';",
        // Restores JSON.stringify after its one use by the runner: the console drain still works.
        'deep-output': `export default ({ payload }) => {
          const n = payload.depth;
          const deep = '['.repeat(n) + '1' + ']'.repeat(n);
          const real = JSON.stringify;
          JSON.stringify = () => { JSON.stringify = real; return '{"message":' + deep + '}'; };
          return { message: 'x' };
        };`,
        'swap-import':
          "import { word } from './lib/word.js';\nexport default () => ({ message: 'import ' + word });",
      },
      { cpuTimeoutMs: 100, deadlineMs: 1500, memoryLimitMb: 32, consoleLinesPerMinute: 5 },
    );
  });
  afterAll(async () => {
    await server.stop();
  });

  it.each(['lines', 'number', 'undefined', 'throws', 'huge', 'object', 'drain-backslash-key'])(
    'transform replaces JSON.stringify (%s): the call fails, the server keeps answering',
    async (variant) => {
      const { status, body } = await server.post('stringify', { variant });
      expect(status).toBe(500);
      expect(codeOf(body)).toBe('transform_failed');
      expect((await server.post('good')).status).toBe(200);
      expect((await server.post('stringify', { variant: 'lines' })).status).toBe(500);
    },
  );

  it.each([
    ['console flood: at most consoleLinesPerMinute lines reach the log', false],
    ['console flood with String.prototype.substring replaced: the caps still hold', true],
  ])('%s', async (_name, tamper) => {
    const before = server.logBytes();
    for (let i = 0; i < 5; i++) await server.post('flood', { tamper });
    expect((await server.post('good')).status).toBe(200);
    const lines = (await server.flushedLogLines()).filter(
      (l) => l['mappingId'] === 'flood' && l['console'],
    );
    expect(lines.length).toBeLessThanOrEqual(5);
    for (const line of lines) expect(String(line['msg']).length).toBeLessThanOrEqual(1000);
    // 5 calls of 1000 lines of 100 KB each: the log grows by kilobytes, not megabytes.
    expect(server.logBytes() - before).toBeLessThan(64 * 1024);
  });

  it.each([100_000, 9])(
    'transform output nested %i deep is refused before the server parses it',
    async (depth) => {
      const { status, body } = await server.post('deep-output', { depth });
      expect(status).toBe(500);
      expect(codeOf(body)).toBe('transform_invalid_output');
      expect(JSON.stringify(body)).toContain('nested deeper than 8');
      expect((await server.post('good')).status).toBe(200);
    },
  );

  it('WebAssembly, SharedArrayBuffer and Atomics are gone, also through Function and indirect eval', async () => {
    const { status, body } = await server.post('probe');
    expect(status).toBe(200);
    expect(JSON.parse((await server.content(body)) as string)).toEqual({
      WebAssembly: 'undefined,undefined,undefined',
      SharedArrayBuffer: 'undefined,undefined,undefined',
      Atomics: 'undefined,undefined,undefined',
      resize: 'undefined',
    });
  });

  it.each([
    ['WebAssembly.Memory grow beyond the limit', 'wasm-memory'],
    ['SharedArrayBuffer beyond the limit', 'shared-buffer'],
    ['resizable ArrayBuffer grown beyond the limit', 'resizable-buffer'],
  ])('%s: transform_failed, the server keeps answering', async (_name, hook) => {
    const { status, body } = await server.post(hook);
    expect(status).toBe(500);
    expect(codeOf(body)).toBe('transform_failed');
    expect((await server.post('good')).status).toBe(200);
  });

  it('file replaced by a symlink outside the root after boot is refused', async () => {
    const first = await server.post('swap');
    expect(first.status).toBe(200);
    expect(await server.content(first.body)).toBe('swap inside');
    const outside = path.join(server.dir, 'outside.js');
    writeFileSync(outside, "export default () => ({ message: 'evil ran' });");
    const file = path.join(server.root, 'swap.js');
    rmSync(file);
    symlinkSync(outside, file);
    for (let i = 0; i < 2; i++) {
      const { status, body } = await server.post('swap');
      expect(status).toBe(500);
      expect(codeOf(body)).toBe('transform_failed');
    }
    await waitFor(
      () =>
        server
          .logLines()
          .some((l) => l['mappingId'] === 'swap' && /refused/.test(String(l['msg']))),
      'a log line naming the mapping',
    );
    const rows = await server.hookgate.store.listActions({ limit: 1000 });
    expect(JSON.stringify(rows)).not.toContain('evil ran');
    // Fixed on disk: served again.
    rmSync(file);
    writeFileSync(file, "export default () => ({ message: 'fixed' });");
    const fixed = await server.post('swap');
    expect(fixed.status).toBe(200);
    expect(await server.content(fixed.body)).toBe('fixed');
  });

  it('imported file replaced by a symlink outside the root after boot is refused', async () => {
    expect((await server.post('swap-import')).status).toBe(200);
    const outside = path.join(server.dir, 'outside-word.js');
    writeFileSync(outside, "export const word = 'evil ran';");
    const file = path.join(server.root, 'lib', 'word.js');
    rmSync(file);
    symlinkSync(outside, file);
    const { status, body } = await server.post('swap-import');
    expect(status).toBe(500);
    expect(codeOf(body)).toBe('transform_failed');
    const rows = await server.hookgate.store.listActions({ limit: 1000 });
    expect(JSON.stringify(rows)).not.toContain('evil ran');
  });
});

describe('WebAssembly allowed by hooks.transforms.allowWebAssembly', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startServer(
      {
        probe:
          'export default () => ({ message: [typeof WebAssembly, typeof SharedArrayBuffer, typeof Atomics].join(",") });',
      },
      { allowWebAssembly: true },
    );
  });
  afterAll(async () => {
    await server.stop();
  });

  it('leaves them in the global', async () => {
    const { status, body } = await server.post('probe');
    expect(status).toBe(200);
    expect(await server.content(body)).toBe('object,function,object');
  });
});

describe('deadlines and process count', () => {
  it('deadline miss under load restarts one process once', async () => {
    const server = await startServer(
      { bomb: BOMB, good: GOOD },
      { cpuTimeoutMs: 100, deadlineMs: 1500, processes: 1 },
    );
    try {
      const [before] = transformPids();
      const bomb = server.post('bomb');
      const during = await Promise.all(Array.from({ length: 30 }, () => server.post('good')));
      const bombed = await bomb;
      const after = await Promise.all(Array.from({ length: 30 }, () => server.post('good')));
      expect(bombed.status).toBe(500);
      expect(codeOf(bombed.body)).toBe('transform_timeout');
      expect(during.filter((r) => r.status === 200)).toHaveLength(30);
      expect(after.filter((r) => r.status === 200)).toHaveLength(30);
      const missed = (await server.flushedLogLines()).filter((l) =>
        /missed its deadline/.test(String(l['msg'])),
      );
      expect(missed).toHaveLength(1);
      expect(transformPids()).toHaveLength(1);
      expect(transformPids()).not.toContain(before);
    } finally {
      await server.stop();
    }
  });

  it('a burst of slow but honest calls queued in one process is not counted late', async () => {
    // 25 calls of 100 ms each in one process: 2.5 s in all, past the 1.5 s deadline, yet each
    // call runs well within it once its turn comes. The isolate's own limit is far above one
    // call (a loaded machine can hold its thread off the CPU for a while): only the deadline
    // of queued calls is under test.
    const server = await startServer(
      {
        slow: "export default () => { const end = Date.now() + 100; while (Date.now() < end); return { message: 'slow' }; };",
      },
      { deadlineMs: 1500, cpuTimeoutMs: 1000, processes: 1 },
    );
    try {
      const [before] = transformPids();
      const results = await Promise.all(Array.from({ length: 25 }, () => server.post('slow')));
      // A failed call shows its code.
      expect(
        results.map((r) => (r.status === 200 ? 200 : `${r.status} ${codeOf(r.body)}`)),
      ).toEqual(Array.from({ length: 25 }, () => 200));
      const missed = (await server.flushedLogLines()).filter((l) =>
        /missed its deadline/.test(String(l['msg'])),
      );
      expect(missed).toHaveLength(0);
      expect(transformPids()).toEqual([before]);
    } finally {
      await server.stop();
    }
  });

  it('a missed deadline restarts only the process that held the late call', async () => {
    const server = await startServer(
      { never: 'export default () => new Promise(() => {});', good: GOOD },
      { deadlineMs: 800, processes: 3 },
    );
    try {
      const before = transformPids();
      expect(before).toHaveLength(3);
      const late = await server.post('never');
      expect(late.status).toBe(500);
      expect(codeOf(late.body)).toBe('transform_timeout');
      await waitFor(
        () => transformPids().filter((pid) => !before.includes(pid)).length === 1,
        'a replacement',
      );
      expect(transformPids()).toHaveLength(3);
      expect(transformPids().filter((pid) => before.includes(pid))).toHaveLength(2);
      const good = await Promise.all(Array.from({ length: 9 }, () => server.post('good')));
      expect(good.every((r) => r.status === 200)).toBe(true);
    } finally {
      await server.stop();
    }
  });

  it('three bad calls never leave more processes than configured', async () => {
    const server = await startServer(
      { bomb: BOMB, good: GOOD },
      { cpuTimeoutMs: 100, deadlineMs: 1500, processes: 2 },
    );
    try {
      expect(transformPids()).toHaveLength(2);
      let most = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          most = Math.max(most, transformPids().length);
          await new Promise((r) => setTimeout(r, 5));
        }
      })();
      const results = await Promise.all([
        ...Array.from({ length: 3 }, () => server.post('bomb')),
        ...Array.from({ length: 10 }, () => server.post('good')),
      ]);
      await waitFor(() => transformPids().length === 2, 'two processes again');
      const good = await Promise.all(Array.from({ length: 10 }, () => server.post('good')));
      sampling = false;
      await sampler;
      expect(results.slice(0, 3).map((r) => r.status)).toEqual([500, 500, 500]);
      expect(good.every((r) => r.status === 200)).toBe(true);
      expect(most).toBeLessThanOrEqual(2);
      // A bomb answered 500 at its deadline may still have its process exiting (its replacement
      // starts only once it is gone): the count settles at two.
      await waitFor(() => transformPids().length === 2, 'two processes at the end');
    } finally {
      await server.stop();
    }
    await waitFor(() => transformPids().length === 0, 'no process after close');
  });
});

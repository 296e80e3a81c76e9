/**
 * End-to-end: sandboxed transforms over real HTTP, with a real transform
 * process. Every return shape, JS and TS modules, and one test per attack.
 */
import { mkdirSync, openSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import type { AgentAction, WakeAction } from '../schemas/action.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { readLogLines } from './helpers/log-lines.ts';
import { unwrap } from './helpers/wrapped.ts';

const MODULES: Record<string, string> = {
  'digest.ts': `
    import { label } from './lib/label.ts';
    type Input = { payload: { n: number; title: string }; headers: Record<string, string> };
    export default function digest({ payload, headers }: Input) {
      console.log('digest for', payload.n);
      return { message: label(payload.n) + ': ' + payload.title + ' via ' + (headers['user-agent'] ?? '?'), name: 'Digest' };
    }`,
  'lib/label.ts': `export const label = (n: number): string => \`#\${n}\`;`,
  'async.mjs': `export async function transform(input) { await null; return { message: 'async ' + input.hook }; }`,
  'named.js': `export function pick(input) { return { message: 'named ' + input.payload.x }; }\nexport default () => ({ message: 'default' });`,
  'shapes.js': `
    export default function ({ payload }) {
      switch (payload.shape) {
        case 'null': return null;
        case 'undefined': return undefined;
        case 'empty': return {};
        case 'array': return [{ message: 'one' }, { message: 'two', sessionKey: undefined }];
        case 'wake': return { kind: 'wake', text: 'switched', mode: 'next-heartbeat' };
        case 'string': return 'not an action';
        case 'unknown-field': return { message: 'x', colour: 'red' };
        case 'bad-type': return { message: 'x', deliver: 'yes' };
        case 'empty-message': return { message: '  ' };
        case 'key': return { message: 'x', sessionKey: 'hook:mine' };
        case 'too-many': return Array.from({ length: 10 }, () => ({ message: 'x' }));
        case 'pollute': return JSON.parse('{"message":"x","__proto__":{"polluted":true}}');
        case 'echo-input': return { message: JSON.stringify(Object.keys(payload)) };
        case 'bad-model': return { message: 'x', model: 'no-provider' };
        case 'bad-channel': return { message: 'x', channel: 'nowhere' };
        case 'other-kind': return { kind: 'wake', text: 'x', name: 'dropped' };
        default: return { message: 'shape ' + payload.shape };
      }
    }`,
  'loop.js': 'export default () => { for (;;) {} };',
  'async-loop.js': 'export default async () => { for (;;) { await null; } };',
  'never.js': 'export default () => new Promise(() => {});',
  'throws.js': `export default () => { throw new Error('secret detail at ${'/'}srv/app/x.js'); };`,
  'recursion.js':
    'const f = (n) => f(n + 1) + 1; export default () => ({ message: String(f(0)) });',
  'string-bomb.js': "export default () => { let s = 'x'; for (;;) s += s; };",
  'huge-output.js': "export default () => ({ message: 'x'.repeat(2_000_000) });",
  'array-bomb.js': 'export default () => ({ message: String(new Array(1e9).fill(0).length) });',
  'escape.js': `export default () => {
      let viaConstructor;
      try { viaConstructor = typeof (() => {}).constructor.constructor('return process')(); } catch (e) { viaConstructor = e.name; }
      const probe = {
        viaConstructor,
        require: typeof globalThis.require, process: typeof globalThis.process, fetch: typeof globalThis.fetch,
        setTimeout: typeof globalThis.setTimeout, Buffer: typeof globalThis.Buffer, importMeta: typeof import.meta,
        globals: Object.getOwnPropertyNames(globalThis).filter((k) => /^[a-z]/.test(k) && !/^(decode|encode|escape|unescape|eval|is|parse)/.test(k)).sort(),
      };
      return { message: JSON.stringify(probe) };
    };`,
  'chatty.js': `export default () => { for (let i = 0; i < 100; i++) console.log('line', i); return { message: 'chatty' }; };`,
  'reload.js': `export default () => ({ message: 'version 1' });`,
};

const mapping = (id: string, module: string, extra: Record<string, unknown> = {}) => ({
  id,
  match: { path: id },
  transform: { module },
  ...extra,
});

describe('transforms', () => {
  const temp = tempDir();
  const root = path.join(temp.dir, 'hooks', 'transforms');
  const logFile = path.join(temp.dir, 'service.log');
  let url: string;
  let close: () => Promise<void>;
  let logger: ReturnType<typeof createLogger>;
  /** The log's lines once what the logger holds is written (it writes asynchronously). */
  const flushedLines = async () => {
    await new Promise<void>((resolve, reject) =>
      logger.flush((err) => (err ? reject(err) : resolve())),
    );
    return readLogLines(logFile);
  };

  const post = async (hook: string, payload: unknown) => {
    const res = await fetch(`${url}/hooks/${hook}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        'user-agent': 'tests',
      },
      body: JSON.stringify(payload),
    });
    const text = await res.text();
    return {
      status: res.status,
      body: text ? (JSON.parse(text) as Record<string, unknown>) : null,
    };
  };
  let store: Awaited<ReturnType<typeof startHookgate>>['store'];
  const action = async (id: unknown) =>
    (await store.listActions({ limit: 1000 })).find((row) => row.action.id === id)?.action;
  const errorCode = (body: Record<string, unknown> | null) =>
    (body?.['error'] as { code: string } | undefined)?.code;

  beforeAll(async () => {
    for (const [file, source] of Object.entries(MODULES)) {
      mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      writeFileSync(path.join(root, file), source);
    }
    const raw = {
      server: { host: '127.0.0.1', port: 0 },
      hooks: {
        enabled: true,
        token: TOKEN,
        maxActionsPerRequest: 5,
        transforms: {
          cpuTimeoutMs: 100,
          deadlineMs: 1500,
          memoryLimitMb: 32,
          consoleLinesPerMinute: 5,
        },
        mappings: [
          mapping('digest', 'digest.ts'),
          mapping('async', 'async.mjs', { action: 'agent' }),
          mapping('named', 'named.js', { transform: { module: 'named.js', export: 'pick' } }),
          mapping('shapes', 'shapes.js', {
            templates: { message: 'from template {{shape}}' },
            name: 'Shapes',
          }),
          ...[
            'loop',
            'async-loop',
            'never',
            'throws',
            'recursion',
            'string-bomb',
            'huge-output',
            'array-bomb',
            'escape',
            'chatty',
            'reload',
          ].map((name) => mapping(name, `${name}.js`)),
        ],
      },
    };
    const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
    logger = createLogger('info', openSync(logFile, 'a'));
    const hookgate = await startHookgate(loaded, {
      logger,
      runtime: false,
    });
    url = hookgate.url;
    store = hookgate.store;
    close = () => hookgate.close();
  });
  afterAll(async () => {
    await close();
    temp.cleanup();
  });

  describe('return shapes', () => {
    it('runs a TypeScript module with a relative import, and logs its console with the mapping id', async () => {
      const { status, body } = await post('digest', { n: 7, title: 'Fix login' });
      expect(status).toBe(200);
      const stored = (await action(body?.['runId'])) as AgentAction;
      expect(unwrap(stored.prompt as string).content).toBe('#7: Fix login via tests');
      expect(stored).toMatchObject({
        name: 'Digest',
        mappingId: 'digest',
        sessionKeySource: 'generated',
      });
      // The console line comes from the transform process beside the answer: wait for it.
      await vi.waitFor(async () =>
        expect(await flushedLines()).toContainEqual(
          expect.objectContaining({ mappingId: 'digest', console: true, msg: 'digest for 7' }),
        ),
      );
    });

    it('awaits an async export named "transform"', async () => {
      const { status, body } = await post('async', {});
      expect(status).toBe(200);
      expect(
        unwrap(((await action(body?.['runId'])) as AgentAction).prompt as string).content,
      ).toBe('async async');
    });

    it('uses transform.export when given', async () => {
      const { body } = await post('named', { x: 1 });
      expect(
        unwrap(((await action(body?.['runId'])) as AgentAction).prompt as string).content,
      ).toBe('named 1');
    });

    it.each([
      ['undefined', 'from template undefined'],
      ['empty', 'from template empty'],
    ])('%s keeps the template-built action', async (shape, content) => {
      const { status, body } = await post('shapes', { shape });
      expect(status).toBe(200);
      const stored = (await action(body?.['runId'])) as AgentAction;
      expect(unwrap(stored.prompt as string).content).toBe(content);
      expect(stored.name).toBe('Shapes');
    });

    it('null drops the request: 204, nothing stored', async () => {
      const before = (await store.listActions({ limit: 1000 })).length;
      const { status, body } = await post('shapes', { shape: 'null' });
      expect(status).toBe(204);
      expect(body).toBeNull();
      expect((await store.listActions({ limit: 1000 })).length).toBe(before);
    });

    it('an object is merged over the template-built action', async () => {
      const { body } = await post('shapes', { shape: 'custom' });
      const stored = (await action(body?.['runId'])) as AgentAction;
      expect(unwrap(stored.prompt as string).content).toBe('shape custom');
      expect(stored.name).toBe('Shapes');
    });

    it('an array fans out', async () => {
      const { status, body } = await post('shapes', { shape: 'array' });
      expect(status).toBe(200);
      expect(body?.['runIds']).toHaveLength(2);
    });

    it('kind switches agent to wake and drops agent fields', async () => {
      const { status, body } = await post('shapes', { shape: 'wake' });
      expect(status).toBe(200);
      const stored = (await action(body?.['id'])) as WakeAction;
      expect(stored).toMatchObject({ kind: 'wake', mode: 'next-heartbeat' });
      expect(unwrap(stored.prompt as string).content).toBe('switched');
      expect(stored).not.toHaveProperty('name');
    });

    it('caps an array at hooks.maxActionsPerRequest and says so', async () => {
      const { status, body } = await post('shapes', { shape: 'too-many' });
      expect(status).toBe(200);
      expect(body?.['runIds']).toHaveLength(5);
      expect(body?.['truncated']).toEqual({ total: 10, accepted: 5 });
    });

    it('drops fields of the other kind after a kind switch', async () => {
      const { status, body } = await post('shapes', { shape: 'other-kind' });
      expect(status).toBe(200);
      const stored = (await action(body?.['id'])) as WakeAction;
      expect(stored).toMatchObject({ kind: 'wake', text: 'x' });
      expect(stored).not.toHaveProperty('name');
    });

    it('a session key from a transform counts as request-supplied', async () => {
      const { status, body } = await post('shapes', { shape: 'key' });
      expect(status).toBe(403);
      expect(errorCode(body)).toBe('session_key_not_allowed');
    });
  });

  describe('invalid output (500 transform_invalid_output, nothing stored)', () => {
    it.each([
      ['a string', 'string', 'output'],
      ['an unknown field', 'unknown-field', 'colour'],
      ['a wrong type', 'bad-type', 'deliver'],
      ['an empty message', 'empty-message', 'message'],
      ['a malformed model', 'bad-model', 'model'],
      ['an unknown channel', 'bad-channel', 'channel'],
    ])('%s', async (_name, shape, field) => {
      const before = (await store.listActions({ limit: 1000 })).length;
      const { status, body } = await post('shapes', { shape });
      expect(status).toBe(500);
      expect(errorCode(body)).toBe('transform_invalid_output');
      expect((body?.['error'] as { message: string } | undefined)?.message).toContain(field);
      expect((await store.listActions({ limit: 1000 })).length).toBe(before);
    });

    it('prototype pollution through the returned object is refused and pollutes nothing', async () => {
      const { status, body } = await post('shapes', { shape: 'pollute' });
      expect(status).toBe(500);
      expect(errorCode(body)).toBe('transform_invalid_output');
      expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    });

    it('__proto__ in the input reaches the transform as plain data only', async () => {
      const res = await fetch(`${url}/hooks/shapes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
        body: '{"shape":"echo-input","__proto__":{"polluted":true}}',
      });
      expect(res.status).toBe(200);
      const stored = (await action(((await res.json()) as { runId: string }).runId)) as AgentAction;
      expect(JSON.parse(unwrap(stored.prompt as string).content)).toEqual(['shape', '__proto__']);
      expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    });
  });

  describe('attacks', () => {
    it.each([
      ['infinite loop', 'loop', 'transform_timeout'],
      ['async infinite loop', 'async-loop', 'transform_timeout'],
      ['never-settling promise', 'never', 'transform_timeout'],
      ['throwing', 'throws', 'transform_failed'],
      // A cold isolate may spend its CPU time before the stack overflows: either ending is clean.
      ['deep recursion', 'recursion', 'transform_failed|transform_timeout'],
      ['string memory bomb', 'string-bomb', 'transform_failed'],
      ['huge output', 'huge-output', 'transform_failed'],
    ])('%s -> 500 %s, no internals in the body, next call works', async (_name, hook, code) => {
      const { status, body } = await post(hook, {});
      expect(status).toBe(500);
      expect(code.split('|')).toContain(errorCode(body));
      const text = JSON.stringify(body);
      expect(text).not.toMatch(/\/srv|\/tmp|\/work|\bat \w|secret detail/);
      expect((await post('digest', { n: 1, title: 'after' })).status).toBe(200);
    });

    it('host objects are out of reach (constructor.constructor, globalThis probing)', async () => {
      const { status, body } = await post('escape', {});
      expect(status).toBe(200);
      const probe = JSON.parse(
        unwrap(((await action(body?.['runId'])) as AgentAction).prompt as string).content,
      );
      expect(probe).toMatchObject({
        viaConstructor: 'ReferenceError',
        require: 'undefined',
        process: 'undefined',
        fetch: 'undefined',
        setTimeout: 'undefined',
        Buffer: 'undefined',
      });
      // Only the language's own lower-case globals and our console: nothing of Node or the host.
      expect(probe.globals).toEqual(['console', 'globalThis', 'undefined']);
    });

    it('new Array(1e9).fill(0): the service keeps answering, the next transform call succeeds', async () => {
      const bomb = post('array-bomb', {});
      const started = Date.now();
      const others: number[] = [];
      while (Date.now() - started < 1200) {
        const res = await fetch(`${url}/hooks/wake`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}` },
          body: JSON.stringify({ text: 'still here' }),
        });
        others.push(res.status);
        await new Promise((r) => setTimeout(r, 50));
      }
      const { status, body } = await bomb;
      expect(status).toBe(500);
      expect(['transform_timeout', 'transform_failed']).toContain(errorCode(body));
      expect(others.length).toBeGreaterThan(5);
      expect(others.every((s) => s === 200)).toBe(true);
      expect((await post('digest', { n: 2, title: 'after the bomb' })).status).toBe(200);
    });

    it('console output is rate-limited per mapping', async () => {
      await post('chatty', {});
      const chatty = async () =>
        (await flushedLines()).filter((l) => l['mappingId'] === 'chatty' && l['console']);
      // The five allowed lines arrive beside the answer; none past them follows.
      await vi.waitFor(async () => expect((await chatty()).length).toBeGreaterThanOrEqual(5));
      expect(await chatty()).toHaveLength(5);
    });
  });

  describe('hot recompile', () => {
    it('recompiles a changed module and keeps the last good version after a broken edit', async () => {
      const file = path.join(root, 'reload.js');
      const content = async () =>
        unwrap(
          ((await action((await post('reload', {})).body?.['runId'])) as AgentAction)
            .prompt as string,
        ).content;
      expect(await content()).toBe('version 1');
      await new Promise((r) => setTimeout(r, 20));
      writeFileSync(file, "export default () => ({ message: 'version 2' });");
      expect(await content()).toBe('version 2');
      await new Promise((r) => setTimeout(r, 20));
      writeFileSync(file, 'export default () => ({ message: ');
      expect(await content()).toBe('version 2');
    });
  });
});

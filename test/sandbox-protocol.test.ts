/**
 * The server's side of the sandbox boundary against a real child process
 * that lies (test/fixtures/sandbox/lying-child.mjs, run through the
 * supervisor's engine-internal `entry` option): every malformed, oversized
 * or unexpected answer fails that call with transform_failed and restarts
 * that process, never the server; the next call is served by a new process.
 * Plus the pure pieces: the message check, the frame reader and writer.
 */
import { openSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { fc, test } from '@fast-check/vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookError } from '../engine/errors.ts';
import { createLogger } from '../engine/log.ts';
import { encodeFrame, FrameReader, turnWriter } from '../engine/sandbox/frames.ts';
import { checkMessage } from '../engine/sandbox/message-check.ts';
import { createSupervisor, type TransformSupervisor } from '../engine/sandbox/supervisor.ts';
import { tempDir } from './helpers/hookgate.ts';
import { childrenFromNow } from './helpers/started-children.ts';
import { SANDBOX_SETTINGS } from './helpers/sandbox-settings.ts';
import { readLogLines } from './helpers/log-lines.ts';

// The transform processes this file's supervisors started.
const transformPids = childrenFromNow();

const LYING_CHILD = fileURLToPath(new URL('./fixtures/sandbox/lying-child.mjs', import.meta.url));
const SETTINGS = SANDBOX_SETTINGS;

async function waitFor(check: () => boolean, what: string): Promise<void> {
  const until = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const codeOf = async (promise: Promise<unknown>): Promise<string> => {
  try {
    await promise;
    return 'resolved';
  } catch (err) {
    return err instanceof HookError ? err.code : `not a HookError: ${(err as Error).message}`;
  }
};

describe('a lying transform process', () => {
  const temp = tempDir();
  const logFile = path.join(temp.dir, 'service.log');
  let supervisor: TransformSupervisor;
  const logLines = () => readLogLines(logFile);

  beforeAll(async () => {
    supervisor = createSupervisor(
      [{ key: 'm', mappingId: 'lying', root: temp.dir, file: path.join(temp.dir, 'm.js') }],
      SETTINGS,
      createLogger('info', openSync(logFile, 'a')),
      { entry: LYING_CHILD },
    );
    await supervisor.start();
  });
  afterAll(async () => {
    await supervisor.close();
    temp.cleanup();
  });

  it('answers honest calls', async () => {
    expect(await supervisor.call('m', { attack: 'none' })).toEqual({
      value: { message: 'honest' },
    });
  });

  it.each([
    ['console drain lies with {lines:[null]}', 'null-lines'],
    ['console lines are not an array', 'lines-not-array'],
    ['more console lines than a call may have', 'too-many-lines'],
    ['a console line longer than the cap', 'long-line'],
    ['an unknown console level', 'bad-level'],
    ['a dropped-line count that is not a number', 'dropped-string'],
    ['an output that is not a string', 'output-not-string'],
    ['an output over maxOutputBytes', 'huge-output'],
    ['an output over maxOutputBytes in UTF-8, under it in characters', 'multibyte-output'],
    ['a __proto__ key in the message', 'proto-key'],
    ['a message that is not JSON', 'not-json'],
    ['a deeply nested message', 'deep-nesting'],
    ['a frame that declares a gigabyte', 'huge-frame'],
    ['an answer to an id never sent', 'unknown-id'],
    ['an answer naming as the next call one never sent', 'next-unknown'],
    ['an answer naming its own call as the next', 'next-self'],
    ['the same id answered twice', 'twice'],
    ['an unknown message type', 'unknown-type'],
    ['a second "loaded"', 'second-loaded'],
    ['a flood of log messages', 'log-flood'],
    ['a flood of compiled-module reports', 'report-flood'],
    ['a log message for an unknown module', 'log-unknown-key'],
    ['the process exits mid-call', 'exits'],
    ['the process closes its answer channel', 'closes-channel'],
  ])(
    '%s: the call fails with transform_failed, the process is replaced, the next call works',
    async (_name, attack) => {
      const before = transformPids();
      expect(before).toHaveLength(1);
      const code = await codeOf(supervisor.call('m', { attack }));
      // "twice" may resolve the first answer before the lie is seen; every other lie fails the call.
      if (attack === 'twice') expect(['resolved', 'transform_failed']).toContain(code);
      else expect(code).toBe('transform_failed');
      await waitFor(
        () => transformPids().length === 1 && transformPids()[0] !== before[0],
        'a replacement',
      );
      expect(await supervisor.call('m', { attack: 'none' })).toEqual({
        value: { message: 'honest' },
      });
    },
  );

  it('a call that is never answered times out and only then is the process replaced', async () => {
    const [before] = transformPids();
    expect(await codeOf(supervisor.call('m', { attack: 'never-answers' }))).toBe(
      'transform_timeout',
    );
    await waitFor(
      () => transformPids().length === 1 && transformPids()[0] !== before,
      'a replacement',
    );
    expect(await supervisor.call('m', { attack: 'none' })).toEqual({
      value: { message: 'honest' },
    });
  });

  it('a process that dies with calls in flight: the call it runs fails, the others are sent again', async () => {
    const [before] = transformPids();
    const held = supervisor.call('m', { attack: 'exit-on-next-call' });
    const next = supervisor.call('m', { attack: 'none' });
    expect(await codeOf(held)).toBe('transform_failed');
    expect(await next).toEqual({ value: { message: 'honest' } });
    expect(transformPids()).not.toContain(before);
  });

  it('an answer to a call it was not running (it holds the one it runs): both fail, the process is replaced', async () => {
    const [before] = transformPids();
    // The process runs the first call it was sent and holds it; answering the second is a lie.
    const held = supervisor.call('m', { attack: 'never-answers' });
    const early = supervisor.call('m', { attack: 'none' });
    expect(await codeOf(early)).toBe('transform_failed');
    expect(await codeOf(held)).toBe('transform_failed');
    await waitFor(
      () => transformPids().length === 1 && transformPids()[0] !== before,
      'a replacement',
    );
    expect(await supervisor.call('m', { attack: 'none' })).toEqual({
      value: { message: 'honest' },
    });
  });

  it('an output that is not JSON is transform_invalid_output and the process stays', async () => {
    const [before] = transformPids();
    expect(await codeOf(supervisor.call('m', { attack: 'output-invalid-json' }))).toBe(
      'transform_invalid_output',
    );
    expect(await supervisor.call('m', { attack: 'none' })).toEqual({
      value: { message: 'honest' },
    });
    expect(transformPids()).toEqual([before]);
  });

  it('a flood on stderr: the call is served, at most 20 chunks a minute reach the log, each cut', async () => {
    expect(await supervisor.call('m', { attack: 'stderr-flood' })).toEqual({
      value: { message: 'honest' },
    });
    await waitFor(
      () => logLines().some((line) => line['msg'] === 'transform process stderr'),
      'stderr in the log',
    );
    const logged = logLines().filter((line) => line['msg'] === 'transform process stderr');
    expect(logged.length).toBeLessThanOrEqual(20);
    for (const line of logged) expect(String(line['stderr']).length).toBeLessThanOrEqual(1000);
  });

  it('a flood of log messages: at most a bounded number reach the log', async () => {
    await waitFor(() => logLines().length > 0, 'the log');
    const flood = logLines().filter((line) => String(line['msg']).startsWith('flood '));
    expect(flood.length).toBeLessThanOrEqual(30);
  });
});

describe('a transform process that never finishes loading', () => {
  it('is killed after the load timeout and the start fails; nothing is left behind', async () => {
    const temp = tempDir();
    const supervisor = createSupervisor(
      [{ key: 'silent', mappingId: 'silent', root: temp.dir, file: path.join(temp.dir, 's.js') }],
      SETTINGS,
      createLogger('silent'),
      { entry: LYING_CHILD },
    );
    try {
      expect(await codeOf(supervisor.start())).toMatch(/not a HookError: .*exited/);
      await waitFor(() => transformPids().length === 0, 'the process to be gone');
    } finally {
      await supervisor.close();
      temp.cleanup();
    }
  });
});

describe('a mapping whose calls crash the transform process', () => {
  it('crashing it twice with another mapping’s calls held behind: only the crashing calls fail, the others are answered', async () => {
    const temp = tempDir();
    const supervisor = createSupervisor(
      ['bomb', 'honest'].map((key) => ({
        key,
        mappingId: key,
        root: temp.dir,
        file: path.join(temp.dir, `${key}.js`),
      })),
      SETTINGS,
      createLogger('silent'),
      { entry: LYING_CHILD },
    );
    try {
      await supervisor.start();
      // One process runs them in order: each bomb ends the process with the calls behind it held.
      const bombs = [
        supervisor.call('bomb', { attack: 'exits' }),
        supervisor.call('bomb', { attack: 'exits' }),
      ];
      const honest = Array.from({ length: 3 }, () => supervisor.call('honest', {}));
      expect(await Promise.all(bombs.map(codeOf))).toEqual([
        'transform_failed',
        'transform_failed',
      ]);
      expect(await Promise.all(honest)).toEqual(Array(3).fill({ value: { message: 'honest' } }));
    } finally {
      await supervisor.close();
      temp.cleanup();
    }
  });
});

describe('the message check', () => {
  const caps = { maxOutputBytes: 1000, maxModules: 2 };

  test.prop([fc.string({ maxLength: 2000 })])(
    'any text: a checked message or a refusal, never a throw',
    (text) => {
      const checked = checkMessage(text, caps);
      expect(typeof checked.ok).toBe('boolean');
    },
  );

  test.prop([fc.jsonValue({ maxDepth: 5 })])(
    'any JSON value: a checked message or a refusal, never a throw',
    (value) => {
      const checked = checkMessage(JSON.stringify(value), caps);
      if (checked.ok) expect(['result', 'loaded', 'log']).toContain(checked.message.type);
    },
  );

  it.each([
    [
      'a result',
      {
        type: 'result',
        id: 1,
        output: '{}',
        console: [{ level: 'info', text: 'x' }],
        droppedLines: 0,
      },
    ],
    [
      'a failure',
      {
        type: 'result',
        id: 2,
        failure: { kind: 'threw', message: 'x' },
        console: [],
        droppedLines: 3,
      },
    ],
    [
      'an output of exactly maxOutputBytes bytes of UTF-8',
      {
        type: 'result',
        id: 3,
        output: `"${'\u4e2d'.repeat(332)}xx"`,
        console: [],
        droppedLines: 0,
      },
    ],
    ['loaded', { type: 'loaded', errors: [{ key: 'm', message: 'x' }] }],
    ['a log line', { type: 'log', key: 'm', level: 'warn', message: 'x' }],
  ])('accepts %s', (_name, value) => {
    expect(checkMessage(JSON.stringify(value), caps)).toEqual({ ok: true, message: value });
  });

  it.each([
    [
      'both output and failure',
      {
        type: 'result',
        id: 1,
        output: '{}',
        failure: { kind: 'threw', message: '' },
        console: [],
        droppedLines: 0,
      },
    ],
    [
      'an output one byte over maxOutputBytes in UTF-8 (337 characters)',
      {
        type: 'result',
        id: 1,
        output: `"${'\u4e2d'.repeat(332)}xxx"`,
        console: [],
        droppedLines: 0,
      },
    ],
    ['id 0', { type: 'result', id: 0, console: [], droppedLines: 0 }],
    ['a fractional id', { type: 'result', id: 1.5, console: [], droppedLines: 0 }],
    ['a negative drop count', { type: 'result', id: 1, console: [], droppedLines: -1 }],
    [
      'an unknown failure kind',
      {
        type: 'result',
        id: 1,
        failure: { kind: 'odd', message: '' },
        console: [],
        droppedLines: 0,
      },
    ],
    [
      'too many load errors',
      { type: 'loaded', errors: [1, 2, 3].map((n) => ({ key: `${n}`, message: '' })) },
    ],
    ['a null message', null],
    ['an array', []],
  ])('refuses %s', (_name, value) => {
    expect(checkMessage(JSON.stringify(value), caps).ok).toBe(false);
  });
});

describe('the frame reader', () => {
  test.prop([
    fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 10 }),
    fc.integer({ min: 1, max: 64 }),
  ])('frames split at any byte boundary come back whole and in order', (values, step) => {
    const bytes = Buffer.concat(values.map(encodeFrame));
    const reader = new FrameReader(1024 * 1024);
    const frames: string[] = [];
    for (let at = 0; at < bytes.length; at += step)
      frames.push(...reader.push(bytes.subarray(at, at + step)).frames);
    expect(frames.map((text) => JSON.parse(text))).toEqual(
      values.map((v) => JSON.parse(JSON.stringify(v))),
    );
  });

  it('refuses a frame whose declared length is over the cap before buffering it', () => {
    const reader = new FrameReader(100);
    const head = Buffer.alloc(4);
    head.writeUInt32BE(101, 0);
    expect(reader.push(head).error).toBeDefined();
    expect(reader.push(Buffer.alloc(10)).error).toBeDefined();
  });
});

describe('the frame writer', () => {
  /** A sink recording each write the stream makes (one per system call on a pipe). */
  function sink() {
    const writes: Buffer[][] = [];
    const stream = new Writable({
      writev(chunks, done) {
        writes.push(chunks.map(({ chunk }) => chunk as Buffer));
        done();
      },
      write(chunk: Buffer, _encoding, done) {
        writes.push([chunk]);
        done();
      },
    });
    return { stream, writes };
  }
  const decoded = (writes: Buffer[][]) =>
    writes.map((chunks) =>
      new FrameReader(1024).push(Buffer.concat(chunks)).frames.map((t) => JSON.parse(t)),
    );

  it('sends the calls written in one turn in one write, in order', async () => {
    const { stream, writes } = sink();
    const write = turnWriter(stream);
    write(encodeFrame({ n: 1 }));
    write(encodeFrame({ n: 2 }));
    write(encodeFrame({ n: 3 }));
    expect(writes).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(decoded(writes)).toEqual([[{ n: 1 }, { n: 2 }, { n: 3 }]]);
  });

  it('holds nothing past its turn: a later turn’s call is a write of its own', async () => {
    const { stream, writes } = sink();
    const write = turnWriter(stream);
    write(encodeFrame({ n: 1 }));
    await new Promise((resolve) => setImmediate(resolve));
    write(encodeFrame({ n: 2 }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(decoded(writes)).toEqual([[{ n: 1 }], [{ n: 2 }]]);
  });
});

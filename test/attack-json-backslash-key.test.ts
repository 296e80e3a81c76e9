/**
 * A key holding a backslash: Node 24's JSON.parse (V8) keeps the keys of the objects it
 * built, by their order, and once it parsed an object with such a key, a later object with the
 * same keys before it and an escape where that backslash was (`\u0041`, `\n`) gets the earlier
 * key. A sender could rename the keys of later bodies, another sender's included. Such keys are
 * refused before any parse (400 invalid_json), so the parser never holds one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJsonObject } from '../engine/body.ts';
import { BackslashKeyError, parseForeignJson } from '../engine/foreign-json.ts';
import { decodePush } from '../engine/gmail/push-envelope.ts';
import { parseAnswerJson } from '../engine/outbound/answer-json.ts';
import { outcomeOf } from '../engine/sandbox/call-outcome.ts';
import { checkMessage } from '../engine/sandbox/message-check.ts';
import { HookError } from '../engine/errors.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';

// Each test's first key is its own: the parser's kept keys go by the keys before them.
const refused = (text: string) => () => parseJsonObject(Buffer.from(text), 64);

describe('the defect the refusal guards against', () => {
  it('this Node misreads an escaped key after parsing a key ending in a backslash (if this fails, the engine was fixed and the refusal can go)', () => {
    JSON.parse('{"defect_probe":1,"\\\\":1}');
    expect(Object.keys(JSON.parse('{"defect_probe":1,"\\u0041":1}'))).toEqual([
      'defect_probe',
      '\\',
    ]);
    // Any key holding a backslash stands for a later key whose written start is its text.
    JSON.parse('{"defect_probe_2":1,"\\\\u":1}');
    expect(Object.keys(JSON.parse('{"defect_probe_2":1,"\\u0041B":1}'))).toEqual([
      'defect_probe_2',
      '\\u',
    ]);
  });
});

describe('a key holding a backslash is refused before it is parsed', () => {
  it.each([
    ['a key that is a backslash', '{"first_a":1,"\\\\":1}'],
    ['a key ending in one, spaces before the colon', '{"first_b":1,"x\\\\" \t\n: 1}'],
    ['a key ending in two', '{"first_c":1,"x\\\\\\\\":1}'],
    ['a nested key', '{"first_d":{"inner":[{"y\\\\":1}]}}'],
    ['a backslash written \\u005c', '{"first_f":1,"\\u005c":1}'],
    ['a backslash written \\u005C after a letter', '{"first_g":1,"a\\u005C" :1}'],
    ['after an escaped backslash', '{"first_h":1,"\\\\\\u005c":1}'],
    ['a backslash inside', '{"first_i":1,"a\\\\b":1}'],
    ['the letters of an escape after one', '{"first_j":1,"\\\\u":1}'],
    ['an escaped backslash before an escaped quote', '{"first_k":1,"\\\\\\"x":1}'],
  ])('%s', (_name, text) => {
    expect(refused(text)).toThrow(HookError);
    expect(refused(text)).toThrow(/key holding a backslash/);
  });

  it('after such bodies, escaped keys at the same place still read as written', () => {
    expect(refused('{"first_e":1,"\\\\":1}')).toThrow(/key holding a backslash/);
    expect(parseJsonObject(Buffer.from('{"first_e":1,"\\u0041":1}'), 64)).toEqual({
      first_e: 1,
      A: 1,
    });
    // A key holding a backslash that is not its last character primes the parser too.
    expect(refused('{"first_l":1,"\\\\u":1}')).toThrow(/key holding a backslash/);
    expect(parseJsonObject(Buffer.from('{"first_l":1,"\\u0041B":1}'), 64)).toEqual({
      first_l: 1,
      AB: 1,
    });
  });

  it.each([
    ['a value ending in a backslash', '{"path":"C:\\\\Users\\\\"}', { path: 'C:\\Users\\' }],
    ['an escaped quote before a colon in a value', '{"v":"a\\":b"}', { v: 'a":b' }],
    ['a key with other escapes', '{"a\\nb\\u0041\\"":1}', { 'a\nbA"': 1 }],
    ['a value of backslashes then a key', '{"v":"\\\\\\\\","k":1}', { v: '\\\\', k: 1 }],
    ['a value ending in \\u005c', '{"v":"a\\u005c"}', { v: 'a\\' }],
  ])('kept: %s', (_name, text, value) => {
    expect(parseJsonObject(Buffer.from(text), 64)).toEqual(value);
  });

  it('a body of 200,000 escaped backslashes before quotes: one pass', () => {
    const text = `{"v":"${'\\\\"'.replaceAll('"', '\\"').repeat(100_000)}"}`;
    expect(() => parseJsonObject(Buffer.from(text), 64)).not.toThrow();
  });
});

describe('every other JSON from outside the process is read the same way', () => {
  const primed = (first: string) => `{"${first}":1,"\\\\":1}`;

  it('what a transform process sends back: the call fails with the reason', () => {
    const outcome = outcomeOf('m', { type: 'result', id: 1, output: primed('surface_a') } as never);
    expect(outcome).toMatchObject({ code: 'transform_invalid_output' });
    expect((outcome as HookError).message).toMatch(/key holding a backslash/);
  });

  it("a transform process's messages: not JSON to the host", () => {
    expect(checkMessage(primed('surface_b'), { maxOutputBytes: 1 << 20 } as never)).toEqual({
      ok: false,
      reason: 'not JSON',
    });
  });

  it('a runner or provider answer: not JSON', () => {
    expect(parseAnswerJson(primed('surface_c'))).toBeUndefined();
  });

  it("a mail push's notification: refused as one that is not JSON", () => {
    const notification = '{"emailAddress":"user@example.com","historyId":"1234567890","z\\\\":1}';
    const body = {
      message: {
        data: Buffer.from(notification).toString('base64'),
        messageId: '2070443601311540',
        publishTime: '2021-02-26T19:13:55.749Z',
      },
      subscription: 'projects/myproject/subscriptions/mysubscription',
    };
    expect(decodePush(body)).toMatchObject({ ok: false });
  });

  it('and the parser then reads an escaped key as written', () => {
    expect(() => parseForeignJson(primed('surface_e'))).toThrow(BackslashKeyError);
    expect(parseForeignJson('{"surface_e":1,"\\u0041":1}')).toEqual({ surface_e: 1, A: 1 });
  });
});

describe('over HTTP', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.stop());

  it('a wake with such a key gets 400 invalid_json and stores nothing', async () => {
    const res = await server.post('wake', '{"text":"hello","\\\\":1}');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
    expect(await server.store.listActions({ limit: 10 })).toEqual([]);
  });
});

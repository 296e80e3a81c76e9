/**
 * Body parsing by Content-Type: which types a route takes, JSON and form
 * bodies as real senders (GitHub, Slack) send them, and hostile bodies.
 */
import { isAscii } from 'node:buffer';
import { MIMEType } from 'node:util';
import { createRequire } from 'node:module';
import { fc, test } from '@fast-check/vitest';
import type { WebhookDefinition } from '@octokit/webhooks-examples';
import { describe, expect, it } from 'vitest';
import { HookError } from '../engine/errors.ts';
import {
  bodyFormat,
  charsetsWritten,
  decideBodyFormat,
  parseBody,
} from '../engine/ingress/content-types.ts';
import { MAX_FORM_FIELDS } from '../engine/ingress/form.ts';

const FORM = 'application/x-www-form-urlencoded';
const HOOK = { maxDepth: 20, forms: true };
const JSON_ONLY = { maxDepth: 20, forms: false };

type Outcome =
  | { ok: Record<string, unknown> }
  | { code: string; details: Readonly<Record<string, unknown>> | undefined };

/** Parse, turning a HookError into its code and details; anything else fails the test. */
function outcome(raw: Buffer | string, contentType: string | undefined, limits = HOOK): Outcome {
  try {
    return { ok: parseBody(Buffer.from(raw), contentType, limits) };
  } catch (err) {
    if (!(err instanceof HookError)) throw err;
    return { code: err.code, details: err.details };
  }
}

function refusal(raw: Buffer | string, contentType: string | undefined, limits = HOOK): HookError {
  try {
    parseBody(Buffer.from(raw), contentType, limits);
  } catch (err) {
    if (err instanceof HookError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

const form = (fields: Record<string, string> | [string, string][]) =>
  new URLSearchParams(fields).toString();

// The package is CommonJS JSON; require gives the array its types describe.
const examples: WebhookDefinition[] = createRequire(import.meta.url)('@octokit/webhooks-examples');
const allExamples = examples.flatMap((definition) => definition.examples) as object[];
const pushExample = examples.find((definition) => definition.name === 'push')?.examples[0];
const nonAsciiExample = allExamples.find(
  (example) => !isAscii(Buffer.from(JSON.stringify(example))),
);

// bolt-js's copy of the example on api.slack.com "Verifying requests from Slack".
const SLASH_COMMAND =
  'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';

describe('bodyFormat', () => {
  it.each([
    [undefined, 'json'],
    ['application/json', 'json'],
    ['application/json; charset=utf-8', 'json'],
    ['Application/JSON ; Charset="UTF-8"', 'json'],
    ['application/vnd.github+json', 'json'],
    ['application/cloudevents+json; charset=utf8', 'json'],
    ['text/plain;charset=UTF-8', 'json'],
    [FORM, 'form'],
    [`${FORM}; charset=UTF-8`, 'form'],
  ])('takes %s as %s', (contentType, format) => {
    expect(bodyFormat(contentType, true)).toBe(format);
  });

  it.each([
    ['text/html'],
    ['text/json'],
    ['application/xml'],
    ['application/+json'],
    ['multipart/form-data; boundary=x'],
    ['application/json; charset=latin1'],
    [`${FORM}; charset=iso-8859-1`],
    ['application/json garbage'],
    ['json'],
    [''],
  ])('refuses %j with unsupported_media_type before any body is read', (contentType) => {
    expect(() => bodyFormat(contentType, true)).toThrow(
      expect.objectContaining({ code: 'unsupported_media_type', status: 415 }),
    );
  });

  it('names the accepted types in the refusal', () => {
    const error = refusal('x', 'text/html');
    expect(error.details).toEqual({
      accepted: ['application/json', 'application/*+json', 'text/plain', FORM],
      mediaType: 'text/html',
    });
  });

  it('refuses a form where the route takes JSON only, telling to send application/json', () => {
    const error = refusal(SLASH_COMMAND, FORM, JSON_ONLY);
    expect(error.code).toBe('unsupported_media_type');
    expect(error.details).toEqual({
      accepted: ['application/json', 'application/*+json', 'text/plain'],
      mediaType: FORM,
    });
    expect(error.message).toContain('Content-Type: application/json');
  });

  it.each([
    ['no Content-Type', undefined],
    ['application/json', 'application/json'],
    ['application/<x>+json', 'application/vnd.github+json'],
  ])('a JSON-only route still takes %s', (_name, contentType) => {
    expect(outcome('{"text":"hi"}', contentType, JSON_ONLY)).toEqual({ ok: { text: 'hi' } });
  });
});

describe('JSON bodies', () => {
  it.each([
    ['an object', '{"a":1}', { ok: { a: 1 } }],
    ['an array', '[1]', { code: 'invalid_json', details: undefined }],
    ['an empty body', '', { code: 'invalid_json', details: undefined }],
    ['a form under a JSON type', 'a=1', { code: 'invalid_json', details: undefined }],
  ])('%s', (_name, body, expected) => {
    expect(outcome(body, 'application/json; charset=utf-8')).toEqual(expected);
  });
});

describe('form bodies: success', () => {
  it('reads a GitHub form delivery (payload=<json>) as the JSON delivery itself', () => {
    expect(pushExample).toBeDefined();
    const json = JSON.stringify(pushExample);
    expect(outcome(form({ payload: json }), FORM)).toEqual({ ok: pushExample });
    expect(outcome(json, 'application/json')).toEqual({ ok: pushExample });
  });

  it('keeps non-ASCII text of a GitHub form delivery (emoji, accents)', () => {
    expect(nonAsciiExample).toBeDefined();
    const body = form({ payload: JSON.stringify(nonAsciiExample) });
    expect(outcome(body, FORM)).toEqual({ ok: nonAsciiExample });
  });

  it("reads Slack's slash command as its plain fields", () => {
    const result = outcome(SLASH_COMMAND, FORM);
    expect(result).toEqual({
      ok: {
        token: 'xyzz0WbapA4vBCDEFasx0q6G',
        team_id: 'T1DC2JH3J',
        team_domain: 'testteamnow',
        channel_id: 'G8PSS9T3V',
        channel_name: 'foobar',
        user_id: 'U2CERLKJA',
        user_name: 'roadrunner',
        command: '/webhook-collect',
        text: '',
        response_url:
          'https://hooks.slack.com/commands/T1DC2JH3J/397700885554/96rGlfmibIGlgcZRskXaIFfN',
        trigger_id: '398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
      },
    });
  });

  it("reads Slack's interactivity (payload=<json>) as its JSON payload", () => {
    const action = { type: 'block_actions', user: { id: 'U2CERLKJA' }, actions: [{ value: 'ok' }] };
    expect(outcome(form({ payload: JSON.stringify(action) }), FORM)).toEqual({ ok: action });
  });

  it.each([
    ['+ is a space', 'text=deploy+now%21', { text: 'deploy now!' }],
    ['%2B is a plus', 'text=1%2B1', { text: '1+1' }],
    ['a name without =', 'flag&text=x', { flag: '', text: 'x' }],
    ['empty pieces are skipped', '&a=1&&b=2&', { a: '1', b: '2' }],
    ['raw UTF-8 is kept', 'text=caf\u00e9', { text: 'caf\u00e9' }],
    [
      'a payload beside other fields stays a field',
      'payload=%7B%7D&x=1',
      { payload: '{}', x: '1' },
    ],
    ['ssl_check probe', 'ssl_check=1&token=abc', { ssl_check: '1', token: 'abc' }],
  ])('%s', (_name, body, fields) => {
    expect(outcome(body, FORM)).toEqual({ ok: fields });
  });

  it('gives an object without a prototype', () => {
    const result = parseBody(Buffer.from('a=1'), FORM, HOOK);
    expect(Object.getPrototypeOf(result)).toBeNull();
  });
});

describe('form bodies: refusal', () => {
  it.each([
    ['an empty form', '', 'invalid_form'],
    ['only separators', '&&&', 'invalid_form'],
    ['a payload field that is not JSON', 'payload=hello', 'invalid_json'],
    ['a payload field holding an array', 'payload=%5B1%5D', 'invalid_json'],
  ])('%s', (_name, body, code) => {
    expect(outcome(body, FORM)).toMatchObject({ code });
  });
});

describe('hostile bodies', () => {
  it('field-count flood: one field past the bound is refused, the bound itself is taken', () => {
    const fields = (n: number) => Array.from({ length: n }, (_, i) => `f${i}=x`).join('&');
    expect(outcome(fields(MAX_FORM_FIELDS), FORM)).toHaveProperty('ok');
    expect(outcome(fields(MAX_FORM_FIELDS + 1), FORM)).toEqual({
      code: 'invalid_form',
      details: { limit: MAX_FORM_FIELDS },
    });
  });

  it('field-count flood of a million fields stops at the bound', () => {
    const flood = Array.from({ length: 1_000_000 }, (_, i) => `f${i}=`).join('&');
    expect(outcome(flood, FORM)).toEqual({ code: 'invalid_form', details: { limit: 1000 } });
  });

  it('separator flood (a million empty pieces) is an empty form', () => {
    expect(outcome('&'.repeat(1_000_000), FORM)).toMatchObject({ code: 'invalid_form' });
  });

  it('deep JSON inside payload is refused by the depth bound (nesting bomb)', () => {
    const bomb = `{"a":${'['.repeat(100_000)}}`;
    expect(outcome(form({ payload: bomb }), FORM)).toEqual({
      code: 'invalid_json',
      details: { field: 'payload' },
    });
  });

  it.each([
    ['a lone continuation byte', 'text=%FF'],
    ['an overlong slash', 'text=%C0%AF'],
    ['an encoded surrogate half', 'text=%ED%A0%80'],
    ['a truncated sequence', 'text=%E2%82'],
    ['a code point past U+10FFFF', 'text=%F4%90%80%80'],
    ['invalid bytes in a name', '%FF=x'],
    ['a malformed escape', 'text=%zz'],
    ['a cut escape', 'text=%2'],
  ])('invalid UTF-8 percent sequences: %s is refused, not replaced', (_name, body) => {
    expect(outcome(body, FORM)).toMatchObject({ code: 'invalid_form' });
  });

  it('invalid UTF-8 raw bytes in a form are refused', () => {
    const body = Buffer.concat([Buffer.from('text='), Buffer.from([0xc3, 0x28])]);
    expect(outcome(body, FORM)).toMatchObject({ code: 'invalid_form' });
  });

  it('invalid UTF-8 percent sequences inside payload are refused', () => {
    expect(outcome('payload=%7B%22a%22%3A%22%FF%22%7D', FORM)).toMatchObject({
      code: 'invalid_form',
    });
  });

  it('__proto__ and constructor field names stay plain data (prototype pollution)', () => {
    const result = parseBody(
      Buffer.from('__proto__=polluted&constructor=x&toString=y&hasOwnProperty=z'),
      FORM,
      HOOK,
    );
    expect(Object.getPrototypeOf(result)).toBeNull();
    expect(Object.keys(result)).toEqual(['__proto__', 'constructor', 'toString', 'hasOwnProperty']);
    expect(Object.getOwnPropertyDescriptor(result, '__proto__')?.value).toBe('polluted');
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  it('__proto__ inside the payload JSON stays an own key (prototype pollution)', () => {
    const result = parseBody(Buffer.from(form({ payload: '{"__proto__":{"x":1}}' })), FORM, HOOK);
    expect(Object.hasOwn(result, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>)['x']).toBeUndefined();
  });

  it('parameter pollution: a repeated field name is refused, not first- or last-wins', () => {
    expect(outcome('command=%2Fdeploy&text=staging&text=production', FORM)).toEqual({
      code: 'invalid_form',
      details: { field: 'text' },
    });
  });

  it('a huge single field is taken whole (its bound is the body size)', () => {
    const text = 'x'.repeat(8 * 1024 * 1024);
    expect(outcome(`text=${text}`, FORM)).toEqual({ ok: { text } });
  });

  it('a huge repeated field name comes back shortened', () => {
    const name = 'n'.repeat(100_000);
    const error = refusal(`${name}=1&${name}=2`, FORM);
    expect(error.code).toBe('invalid_form');
    expect(String(error.details?.['field']).length).toBeLessThanOrEqual(65);
  });

  it.each([
    ['charset confusion (charset=latin1)', 'application/json; charset=latin1', '{"a":"\xe9"}'],
    ['charset confusion on a form', `${FORM}; charset=latin1`, 'text=%E9'],
    ['multipart smuggling', 'multipart/form-data; boundary=b', '--b\r\n\r\nx\r\n--b--'],
    ['a JSON look-alike type', 'text/json', '{"text":"hi"}'],
  ])('%s is refused with 415', (_name, contentType, body) => {
    expect(outcome(body, contentType)).toMatchObject({ code: 'unsupported_media_type' });
  });
});

describe('properties', () => {
  const text = fc.string({ unit: 'binary', maxLength: 40 });
  const fieldLists = fc
    .uniqueArray(fc.tuple(text, text), { selector: ([name]) => name, minLength: 1, maxLength: 30 })
    // A lone `payload` field is a JSON delivery, not a plain field.
    .filter((fields) => !(fields.length === 1 && fields[0]?.[0] === 'payload'));

  test.prop([fieldLists])('any object of string fields survives a form round trip', (fields) => {
    const result = parseBody(Buffer.from(form(fields)), FORM, HOOK);
    expect(result).toEqual(Object.fromEntries(fields));
    expect(Object.keys(result)).toHaveLength(fields.length);
  });

  // Bodies made of the characters that matter to form decoding.
  const formish = fc.string({
    unit: fc.constantFrom('a', 'b', '=', '&', '+', '%', '2', 'B', 'F', 'e', '\u00e9', '\u{1f4e6}'),
    maxLength: 60,
  });

  test.prop([formish])('agrees with URLSearchParams on every form it takes', (body) => {
    const result = outcome(body, FORM);
    if ('ok' in result) expect(result.ok).toEqual(Object.fromEntries(new URLSearchParams(body)));
  });

  const contentTypes = fc.oneof(
    fc.constantFrom(undefined, 'application/json', FORM, `${FORM}; charset=utf-8`, 'text/plain'),
    fc.string(),
  );
  const bodies = fc.oneof(
    fc.uint8Array({ maxLength: 200 }),
    formish.map((s) => Buffer.from(s)),
  );

  /** What bodyFormat answers: the format, or the refusal's code, message and details. */
  function decision(contentType: string | undefined, forms: boolean): unknown {
    try {
      return bodyFormat(contentType, forms);
    } catch (err) {
      if (!(err instanceof HookError)) throw err;
      return { code: err.code, message: err.message, details: err.details };
    }
  }

  /** The same decision made afresh, without the kept ones. */
  function fresh(contentType: string | undefined, forms: boolean): unknown {
    if (contentType === undefined) return 'json';
    const made = decideBodyFormat(contentType, forms);
    return made instanceof HookError
      ? { code: made.code, message: made.message, details: made.details }
      : made;
  }

  // Decisions are kept per header value and route kind, at most 64 of them: enough distinct
  // values to restart the memo, and the same value asked for by both kinds of route.
  test.prop([fc.array(fc.tuple(contentTypes, fc.boolean()), { maxLength: 150 })])(
    'a Content-Type gets the answer it would get afresh, in any order, for either kind of route (kept decisions)',
    (asked) => {
      for (const [type, forms] of [...asked, ...[...asked].reverse()]) {
        expect(decision(type, forms)).toEqual(fresh(type, forms));
      }
      expect(decision(FORM, false)).toMatchObject({ code: 'unsupported_media_type' });
      expect(decision(FORM, true)).toBe('form');
    },
  );

  // Parameters built from the pieces that matter to splitting: quotes, escapes, `;`, `=`, blanks.
  const parameterish = fc
    .array(
      fc.oneof(
        fc.constantFrom('; charset=utf-8', '; CHARSET=latin1', ' ; charset =x', '; charset='),
        fc.constantFrom('; a="x;charset=y"', '; b="q\\"; charset=z"', '; c="open', ';', '; d=e'),
        fc.string({
          unit: fc.constantFrom('"', '\\', ';', '=', ' ', 'c', 'charset'),
          maxLength: 12,
        }),
      ),
      { maxLength: 6 },
    )
    .map((parts) => `application/json${parts.join('')}`);

  test.prop([parameterish])(
    'a charset the media-type parser reads is always counted, so one it keeps is never a second one unseen',
    (contentType) => {
      let charset: string | null = null;
      try {
        charset = new MIMEType(contentType).params.get('charset');
      } catch {
        return;
      }
      if (charset !== null) expect(charsetsWritten(contentType)).toBeGreaterThanOrEqual(1);
      if (decideBodyFormat(contentType, true) === 'json') {
        expect(charsetsWritten(contentType)).toBe(charset === null ? 0 : 1);
      }
    },
  );

  test.prop([bodies, contentTypes, fc.boolean()])(
    'never throws anything but HookError',
    (body, contentType, forms) => {
      try {
        parseBody(Buffer.from(body), contentType, { maxDepth: 5, forms });
      } catch (err) {
        expect(err).toBeInstanceOf(HookError);
      }
    },
  );
});

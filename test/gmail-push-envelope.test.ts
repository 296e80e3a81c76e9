/**
 * Decoding Gmail's Pub/Sub pushes: Google's documented envelopes, each
 * refusal by the field it names, one test per attack, and properties: the
 * decoder is total on any JSON, and a valid notification survives a round
 * trip in either base64 alphabet, padded or not.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { decodePush } from '../engine/gmail/push-envelope.ts';

const NOTIFICATION = { emailAddress: 'user@example.com', historyId: '1234567890' };

const std = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');
const url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A wrapped delivery carrying `data`, with message fields overridden. */
function push(data: unknown = std(NOTIFICATION), message: Record<string, unknown> = {}) {
  return {
    message: {
      data,
      messageId: '2070443601311540',
      publishTime: '2021-02-26T19:13:55.749Z',
      ...message,
    },
    subscription: 'projects/myproject/subscriptions/mysubscription',
  };
}

const decoded = (body: unknown) => {
  const result = decodePush(body);
  if (!result.ok) throw new Error(`refused: ${result.reason}`);
  return result.push;
};

describe('accepted pushes', () => {
  it("Gmail guide's example body", () => {
    const body = {
      message: {
        data: 'eyJlbWFpbEFkZHJlc3MiOiAidXNlckBleGFtcGxlLmNvbSIsICJoaXN0b3J5SWQiOiAiMTIzNDU2Nzg5MCJ9',
        messageId: '2070443601311540',
        message_id: '2070443601311540',
        publishTime: '2021-02-26T19:13:55.749Z',
        publish_time: '2021-02-26T19:13:55.749Z',
      },
      subscription: 'projects/myproject/subscriptions/mysubscription',
    };
    expect(decodePush(body)).toEqual({
      ok: true,
      push: {
        messageId: '2070443601311540',
        publishTime: '2021-02-26T19:13:55.749Z',
        subscription: 'projects/myproject/subscriptions/mysubscription',
        emailAddress: 'user@example.com',
        historyId: '1234567890',
      },
    });
  });

  it.each([
    ['padded standard base64', std(NOTIFICATION)],
    ['unpadded standard base64', std(NOTIFICATION).replace(/=+$/, '')],
    ['base64url', url(NOTIFICATION)],
    ['padded base64url', std(NOTIFICATION).replace(/\+/g, '-').replace(/\//g, '_')],
  ])('data as %s', (_, data) => {
    expect(decoded(push(data))).toMatchObject(NOTIFICATION);
  });

  it.each([
    ['a decimal string', '1234567890', '1234567890'],
    ['a number', 1234567890, '1234567890'],
    ['zero', 0, '0'],
    ['the largest safe number', Number.MAX_SAFE_INTEGER, '9007199254740991'],
    ['a string beyond 2^53', '9007199254740993', '9007199254740993'],
    ['the largest 64-bit id', '18446744073709551615', '18446744073709551615'],
    ['leading zeros', '000042', '42'],
  ])('historyId as %s', (_, historyId, expected) => {
    expect(decoded(push(std({ ...NOTIFICATION, historyId }))).historyId).toBe(expected);
  });

  it('snake_case ids alone are read', () => {
    const body = push(std(NOTIFICATION), {
      messageId: undefined,
      publishTime: undefined,
      message_id: '42',
      publish_time: '2026-11-24T10:00:00Z',
    });
    // JSON has no undefined: the camelCase keys are absent on the wire.
    const wire = JSON.parse(JSON.stringify(body));
    expect(decoded(wire)).toMatchObject({ messageId: '42', publishTime: '2026-11-24T10:00:00Z' });
  });

  it('publishTime and subscription are optional; attributes and unknown fields are ignored', () => {
    const body = {
      message: { data: std(NOTIFICATION), messageId: '1', attributes: { a: 'b' } },
      deliveryAttempt: 3,
    };
    expect(decodePush(body)).toEqual({ ok: true, push: { messageId: '1', ...NOTIFICATION } });
  });

  it('extra fields in the notification are ignored', () => {
    expect(decoded(push(std({ ...NOTIFICATION, extra: [1, 2] })))).toMatchObject(NOTIFICATION);
  });
});

describe('refused pushes, by the field named', () => {
  it.each([
    ['message is an array', { message: [] }, 'message'],
    ['message is a string', { message: 'x' }, 'message'],
    ['message is absent', { subscription: 'projects/p/subscriptions/s' }, 'message'],
    ['no message id', push(undefined, { messageId: undefined }), 'message_id'],
    ['empty message id', push(undefined, { messageId: '' }), 'message_id'],
    ['numeric message id', push(undefined, { messageId: 2070443601311540 }), 'message_id'],
    ['message id of 129 characters', push(undefined, { messageId: '1'.repeat(129) }), 'message_id'],
    ['publishTime not RFC 3339', push(undefined, { publishTime: 'yesterday' }), 'publish_time'],
    ['publishTime a number', push(undefined, { publishTime: 1614366835 }), 'publish_time'],
    [
      'subscription not a subscription name',
      { ...push(), subscription: 'mysubscription' },
      'subscription',
    ],
    ['no data', push(undefined, { data: undefined }), 'data'],
    ['empty data', push(''), 'data'],
    ['data not a string', push({ emailAddress: 'user@example.com', historyId: '1' }), 'data'],
    ['data over 4096 characters', push('A'.repeat(4100)), 'data'],
    ['data not base64', push('not base64!'), 'encoding'],
    ['wrong padding', push(`${std(NOTIFICATION).replace(/=+$/, '')}===`), 'encoding'],
    [
      'data not JSON',
      push(Buffer.from('emailAddress=user@example.com').toString('base64')),
      'payload',
    ],
    ['data a JSON array', push(std([NOTIFICATION])), 'payload'],
    ['data a JSON string', push(std('user@example.com')), 'payload'],
    ['no emailAddress', push(std({ historyId: '1' })), 'email_address'],
    [
      'emailAddress without @',
      push(std({ ...NOTIFICATION, emailAddress: 'user' })),
      'email_address',
    ],
    ['emailAddress a number', push(std({ ...NOTIFICATION, emailAddress: 1 })), 'email_address'],
    ['no historyId', push(std({ emailAddress: 'user@example.com' })), 'history_id'],
    ['historyId null', push(std({ ...NOTIFICATION, historyId: null })), 'history_id'],
    ['historyId empty', push(std({ ...NOTIFICATION, historyId: '' })), 'history_id'],
    ['historyId negative', push(std({ ...NOTIFICATION, historyId: -1 })), 'history_id'],
    ['historyId fractional', push(std({ ...NOTIFICATION, historyId: 1.5 })), 'history_id'],
    ['historyId with a sign', push(std({ ...NOTIFICATION, historyId: '+1' })), 'history_id'],
    ['historyId in hex', push(std({ ...NOTIFICATION, historyId: '0x10' })), 'history_id'],
    ['historyId with spaces', push(std({ ...NOTIFICATION, historyId: ' 1' })), 'history_id'],
    [
      'historyId of 21 digits',
      push(std({ ...NOTIFICATION, historyId: '1'.repeat(21) })),
      'history_id',
    ],
  ])('%s', (_, body, reason) => {
    expect(decodePush(body)).toEqual({ ok: false, reason });
  });

  it.each([null, 42, 'text', true, []])('body %j is not an object', (body) => {
    expect(decodePush(body)).toEqual({ ok: false, reason: 'not_object' });
  });
});

describe('attacks', () => {
  const data = (json: string) => push(Buffer.from(json).toString('base64'));

  it('log injection: control characters in the message id', () => {
    expect(decodePush(push(undefined, { messageId: '1\n{"level":50}' }))).toEqual({
      ok: false,
      reason: 'message_id',
    });
  });

  it('log injection: a newline in the mail address', () => {
    const body = push(std({ ...NOTIFICATION, emailAddress: 'user@example.com\nBcc: x@y' }));
    expect(decodePush(body)).toEqual({ ok: false, reason: 'email_address' });
  });

  it('oversized address: 255 characters', () => {
    const emailAddress = `${'a'.repeat(243)}@example.com`;
    expect(emailAddress).toHaveLength(255);
    expect(decodePush(push(std({ ...NOTIFICATION, emailAddress })))).toEqual({
      ok: false,
      reason: 'email_address',
    });
  });

  it('cursor corruption: a historyId number beyond 2^53 (already rounded by JSON.parse)', () => {
    // 9007199254740993 parses as 9007199254740992: the digits Gmail sent are lost.
    expect(
      decodePush(data('{"emailAddress":"user@example.com","historyId":9007199254740993}')),
    ).toEqual({
      ok: false,
      reason: 'history_id',
    });
  });

  it('cursor overflow: a historyId string past 64 bits', () => {
    const body = push(std({ ...NOTIFICATION, historyId: '18446744073709551616' }));
    expect(decodePush(body)).toEqual({ ok: false, reason: 'history_id' });
  });

  it('alphabet mixing: standard and URL-safe characters in one text', () => {
    // Buffer.from would decode it; a strict decoder refuses two alphabets at once.
    const text = url({ ...NOTIFICATION, pad: '>>>>>>???' });
    const mixed = text.replace('-', '+');
    expect(mixed).toMatch(/\+/);
    expect(mixed).toMatch(/[-_]/);
    expect(decodePush(push(mixed))).toEqual({ ok: false, reason: 'encoding' });
  });

  it('junk smuggled between base64 characters (Buffer.from skips it)', () => {
    const text = std(NOTIFICATION);
    const withJunk = `${text.slice(0, 8)}\n.*${text.slice(8)}`;
    expect(Buffer.from(withJunk, 'base64').toString()).toContain('emailAddress');
    expect(decodePush(push(withJunk))).toEqual({ ok: false, reason: 'encoding' });
  });

  it('a second spelling of the same bytes (unused bits set)', () => {
    // "QQ" is "A"; "QR" decodes to "A" too, with the unused low bits set.
    expect(Buffer.from('QR', 'base64').toString()).toBe('A');
    const text = std({ ...NOTIFICATION, x: 'A' });
    const bare = text.replace(/=+$/, '');
    expect(bare.length % 4).not.toBe(0);
    const last = bare.at(-1) as string;
    const tweaked = bare.slice(0, -1) + String.fromCharCode(last.charCodeAt(0) + 1);
    expect(decodePush(push(tweaked))).toEqual({ ok: false, reason: 'encoding' });
  });

  it('invalid UTF-8 in the payload', () => {
    const bytes = Buffer.concat([
      Buffer.from('{"emailAddress":"user@example.com","historyId":"1","x":"'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}'),
    ]);
    expect(decodePush(push(bytes.toString('base64')))).toEqual({ ok: false, reason: 'payload' });
  });

  it('a byte order mark before the payload', () => {
    const bytes = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from(JSON.stringify(NOTIFICATION)),
    ]);
    expect(decodePush(push(bytes.toString('base64')))).toEqual({ ok: false, reason: 'payload' });
  });

  it('prototype pollution: fields under __proto__ are not read', () => {
    const body = data('{"__proto__":{"emailAddress":"user@example.com","historyId":"1"}}');
    expect(decodePush(body)).toEqual({ ok: false, reason: 'email_address' });
    expect(({} as Record<string, unknown>)['emailAddress']).toBeUndefined();
  });

  it('prototype pollution: a message inherited from the prototype is not read', () => {
    const body = JSON.parse(`{"__proto__":${JSON.stringify(push())}}`);
    expect(decodePush(body)).toEqual({ ok: false, reason: 'message' });
  });

  it('inherited fields: an object whose prototype carries the message', () => {
    const body = Object.create({ message: push().message });
    expect(decodePush(body)).toEqual({ ok: false, reason: 'not_object' });
  });

  it('getter trap: a getter is never run', () => {
    let ran = false;
    const message = {
      messageId: '1',
      get data() {
        ran = true;
        return std(NOTIFICATION);
      },
    };
    expect(decodePush({ message })).toEqual({ ok: false, reason: 'data' });
    expect(ran).toBe(false);
  });

  it('proxy trap: a throwing proxy is refused, not touched', () => {
    const trap = new Proxy(
      {},
      {
        getOwnPropertyDescriptor: () => {
          throw new Error('trap');
        },
        getPrototypeOf: () => {
          throw new Error('trap');
        },
      },
    );
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(decodePush(trap)).toEqual({ ok: false, reason: 'not_object' });
    expect(decodePush(proxy)).toEqual({ ok: false, reason: 'not_object' });
    expect(decodePush({ message: proxy })).toEqual({ ok: false, reason: 'message' });
  });

  it('camelCase cannot be bypassed: a bad messageId is not replaced by message_id', () => {
    const body = push(undefined, { messageId: '', message_id: '42' });
    expect(decodePush(body)).toEqual({ ok: false, reason: 'message_id' });
  });

  it('deep nesting inside the payload stays within the data bound', () => {
    const deep = `{"emailAddress":"user@example.com","historyId":"1","x":${'['.repeat(3000)}${']'.repeat(3000)}}`;
    expect(decodePush(data(deep))).toEqual({ ok: false, reason: 'data' });
  });
});

describe('properties', () => {
  const anyJson = fc.jsonValue({ maxDepth: 4 });

  test.prop([anyJson])('never throws on any JSON body', (body) => {
    expect(() => decodePush(body)).not.toThrow();
  });

  test.prop([anyJson, fc.string(), anyJson])(
    'never throws on any message fields or data',
    (messageId, data, fields) => {
      for (const body of [
        { message: { messageId, data } },
        { message: { messageId: '1', data: std(fields) } },
        { message: { messageId: '1', data: url(fields) } },
      ]) {
        expect(() => decodePush(body)).not.toThrow();
      }
    },
  );

  const visible = fc.stringMatching(/^[\x21-\x7e]{1,128}$/);
  const address = fc.emailAddress().filter((a) => a.length <= 254);
  const historyId = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });

  test.prop([visible, address, historyId, fc.boolean(), fc.boolean(), fc.boolean()])(
    'round trip: a valid notification decodes to itself in either alphabet',
    (messageId, emailAddress, id, urlSafe, padded, asNumber) => {
      const wireId = asNumber && id <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : id.toString();
      const json = JSON.stringify({ emailAddress, historyId: wireId });
      let data = Buffer.from(json)
        .toString(urlSafe ? 'base64url' : 'base64')
        .replace(/=+$/, '');
      if (padded) data += '='.repeat((4 - (data.length % 4)) % 4);
      expect(decodePush({ message: { messageId, data } })).toEqual({
        ok: true,
        push: { messageId, emailAddress, historyId: id.toString() },
      });
    },
  );
});

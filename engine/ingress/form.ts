/**
 * Decoding of `application/x-www-form-urlencoded` bodies, part of the body
 * stage. Two kinds of sender use forms: GitHub's form deliveries and Slack's
 * interactivity put a whole JSON payload in a single `payload` field; Slack's
 * slash commands send plain fields (command, text, user_id, ...). A form
 * whose one and only field is `payload` is read as that JSON object; any
 * other form becomes a prototype-free object of its string fields.
 */
import { isUtf8 } from 'node:buffer';
import { parseJsonObject } from '../body.ts';
import { HookError } from '../errors.ts';

/** Most fields a form body may carry; Slack's slash commands send about a dozen. */
export const MAX_FORM_FIELDS = 1000;

/** The field that carries a whole JSON delivery (GitHub form deliveries, Slack interactivity). */
export const PAYLOAD_FIELD = 'payload';

/** Decode a form body: a lone `payload` field as its JSON object, any other form as its fields. */
export function parseForm(raw: Buffer, maxDepth: number): Record<string, unknown> {
  const fields = decodeFields(raw);
  // Decided by the form's shape, never by sniffing a value: the same sender always gets the
  // same reading, and no field is ever dropped.
  const names = Object.keys(fields);
  if (names.length === 1 && names[0] === PAYLOAD_FIELD) {
    return parsePayloadField(fields[PAYLOAD_FIELD] as string, maxDepth);
  }
  return fields;
}

/** Decode every field strictly into a prototype-free object of strings. */
export function decodeFields(raw: Buffer): Record<string, string> {
  if (!isUtf8(raw)) throw invalidForm('The form body is not valid UTF-8.');
  const text = raw.toString('utf8');
  // No prototype: fields named __proto__ or constructor stay plain own data.
  const fields: Record<string, string> = Object.create(null);
  let count = 0;
  let start = 0;
  while (start < text.length) {
    const amp = text.indexOf('&', start);
    const end = amp === -1 ? text.length : amp;
    // Empty pieces (`a=1&&b=2`) are not fields, as in the form serialisation spec.
    if (end > start) {
      // Counted while scanning, so a field flood stops at the first field past the bound.
      if (++count > MAX_FORM_FIELDS) {
        throw invalidForm(`The form has more than ${MAX_FORM_FIELDS} fields.`, {
          limit: MAX_FORM_FIELDS,
        });
      }
      addField(fields, text.slice(start, end));
    }
    start = end + 1;
  }
  if (count === 0) throw invalidForm('The form is empty; send at least one field.');
  return fields;
}

function addField(fields: Record<string, string>, piece: string): void {
  const eq = piece.indexOf('=');
  const name = decodeComponent(eq === -1 ? piece : piece.slice(0, eq));
  const value = eq === -1 ? '' : decodeComponent(piece.slice(eq + 1));
  // Refused, not last-wins: a proxy or signature check that reads the first copy and a
  // mapping that reads the last would see two different requests (parameter pollution).
  if (Object.hasOwn(fields, name)) {
    throw invalidForm('A form field name appears more than once.', { field: shorten(name) });
  }
  fields[name] = value;
}

function decodeComponent(encoded: string): string {
  try {
    // `+` is a space in forms; decodeURIComponent is strict where URLSearchParams is not: it
    // throws on malformed escapes and on percent-encoded bytes that are not UTF-8 (overlong
    // forms, surrogates, truncated sequences) instead of replacing them with U+FFFD.
    return decodeURIComponent(encoded.replaceAll('+', ' '));
  } catch (err) {
    throw invalidForm(
      'A form field has a malformed percent escape or is not UTF-8 once decoded.',
      undefined,
      err,
    );
  }
}

function parsePayloadField(json: string, maxDepth: number): Record<string, unknown> {
  try {
    return parseJsonObject(Buffer.from(json, 'utf8'), maxDepth);
  } catch (err) {
    if (!(err instanceof HookError)) throw err;
    throw new HookError('invalid_json', `In the form field "${PAYLOAD_FIELD}": ${err.message}`, {
      cause: err,
      details: { field: PAYLOAD_FIELD },
    });
  }
}

// Field names come from the caller; only a bounded prefix goes back in an answer.
function shorten(name: string): string {
  return name.length > 64 ? `${name.slice(0, 64)}…` : name;
}

function invalidForm(message: string, details?: Record<string, unknown>, cause?: unknown) {
  return new HookError('invalid_form', message, { cause, details });
}

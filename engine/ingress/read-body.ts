/**
 * The body stages: refuse a content type the route does not take before a
 * byte is read, read the body under the size and time limits, then parse it
 * by content type (after the signature was checked on the raw bytes).
 */
import type { BodyLimits } from '../body.ts';
import {
  type BodyFormat,
  bodyFormatOfLines,
  contentCodingRefusal,
  parseAs,
} from './content-types.ts';
import { type Exchange, had, type Stage } from './exchange.ts';
import { unknownHookError } from './routes.ts';

export type BodySettings = BodyLimits & { maxDepth: number };

/** Read the whole body, refusing an unsupported type first, and a body past its limits. */
export function createReadBody(limits: BodySettings): Stage {
  return async function readBody(x: Exchange) {
    const route = had(x.route, 'route');
    // Authenticated, for a name nothing serves: no body of it could be taken.
    if (route.unknown) throw unknownHookError(had(x.hook, 'hook'));
    // Refused before a byte is read on token routes; a signed route says 415 only after the
    // signature: an unverified caller learns nothing but the generic 401.
    if (!route.gate.verifier) x.format = formatOf(x, route.forms);
    x.raw = await x.source.readBody(limits);
    return undefined;
  };
}

/** Parse the raw body into the payload: JSON, or a form on routes that take forms. */
export function createParse(limits: BodySettings): Stage {
  return function parse(x: Exchange) {
    const route = had(x.route, 'route');
    // Chosen before the read on token routes; on signed ones only now, after the signature.
    let format = x.format ?? formatOf(x, route.forms);
    // A signature covers the bytes, not the Content-Type: a signed JSON object resent labelled
    // as a form was read as fields split at its `&` and `=` (a captured delivery then had no
    // delivery id and ran again, and text a commenter wrote became fields of another event).
    // Such bytes are read as what they are; no sender's form starts with `{`.
    if (format === 'form' && route.gate.verifier && startsAsJsonObject(had(x.raw, 'raw')))
      format = 'json';
    // Kept: a copy that waited for its key parses its body again (replay.ts).
    x.format = format;
    x.payload = parseAs(had(x.raw, 'raw'), format, limits.maxDepth);
    return undefined;
  };
}

/** The parser the headers select; throws the 415 of a content coding or a type not taken. */
function formatOf(x: Exchange, forms: boolean): BodyFormat {
  const coded = contentCodingRefusal(x.source.headers['content-encoding']);
  if (coded) throw coded;
  return bodyFormatOfLines(x.headers('content-type'), forms);
}

/** The bytes, past JSON's white space, start with `{`. */
function startsAsJsonObject(raw: Buffer): boolean {
  for (const byte of raw) {
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
    return byte === 0x7b;
  }
  return false;
}

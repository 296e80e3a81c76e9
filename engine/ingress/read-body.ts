/**
 * The body stages: read the body under the size and time limits, then parse
 * it by content type (after the signature was checked on the raw bytes).
 */
import { type BodyLimits, parseJsonObject } from '../body.ts';
import { type Exchange, had, type Stage } from './exchange.ts';

export type BodySettings = BodyLimits & { maxDepth: number };

/** Read the whole body, refusing it past the size limit or after the time limit. */
export function createReadBody(limits: BodySettings): Stage {
  return async function readBody(x: Exchange) {
    x.raw = await x.source.readBody(limits);
    return undefined;
  };
}

/** Parse the raw body into the payload. */
export function createParse(limits: BodySettings): Stage {
  return function parse(x: Exchange) {
    x.payload = parseJsonObject(had(x.raw, 'raw'), limits.maxDepth);
    return undefined;
  };
}

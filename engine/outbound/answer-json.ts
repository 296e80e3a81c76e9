/**
 * Parsing an upstream answer (runner, channel API, token endpoint) as JSON,
 * with its nesting bounded first: JSON.parse of a deeply nested answer of
 * `runtime.maxReplyBytes` holds the event loop for a good part of a second,
 * and no honest answer nests deeply.
 */
import { nestingDepth } from '../body.ts';
import { parseForeignJson } from '../foreign-json.ts';

/** Deepest nesting of an answer that is parsed; deeper answers read as "not JSON". */
export const ANSWER_DEPTH = 64;

/** The answer's JSON value, or undefined when it is not JSON or nests deeper than ANSWER_DEPTH. */
export function parseAnswerJson(text: string): unknown {
  if (nestingDepth(Buffer.from(text, 'utf8'), ANSWER_DEPTH) > ANSWER_DEPTH) return undefined;
  try {
    return parseForeignJson(text);
  } catch {
    return undefined;
  }
}

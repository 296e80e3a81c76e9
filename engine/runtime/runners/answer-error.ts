/**
 * What a runner's 200 answer without a reply says instead: an endpoint (a
 * relay, an OpenAI-compatible proxy) may answer 200 with an error object, or
 * a model may refuse. Pure: reads the parsed answer, decides nothing else.
 */

/** A non-empty string, else undefined. */
function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

function field(value: unknown, key: string): unknown {
  // Own property only: an answer's "__proto__" or inherited names are not read.
  return value !== null && typeof value === 'object' && Object.hasOwn(value, key)
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

/**
 * The error text of an answer that carries no reply: `error` as a string or
 * its `message`, or a chat completion's `refusal`; undefined when it says
 * nothing of the kind.
 */
export function answerError(parsed: unknown): string | undefined {
  const error = field(parsed, 'error');
  const said = text(error) ?? text(field(error, 'message'));
  if (said) return said;
  const choices = field(parsed, 'choices');
  const first = Array.isArray(choices) ? choices[0] : undefined;
  const refusal = text(field(field(first, 'message'), 'refusal'));
  return refusal && `refused: ${refusal}`;
}

/**
 * Schema validation with ajv: one instance, validators compiled once, and
 * ajv's errors turned into one readable line naming the offending field.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { CREDENTIAL_FORMATS, CREDENTIAL_WORDS, FORMAT_WORDS } from '../schemas/credentials.ts';
import { VISIBLE_PATTERN } from '../schemas/payloads.ts';

/**
 * Why a value failed: the first bad field, a readable message, and whether the field was
 * absent, empty or blank (`empty`), which callers word in their own terms.
 */
export type Invalid = { ok: false; field: string; message: string; empty: boolean };

/** Validates in place; returns the typed value or what is wrong with the first bad field. */
export type Validator<T> = (value: unknown) => { ok: true; value: T } | Invalid;

type Options = { useDefaults?: boolean; unknownLabel?: string };

// The schemas' shared patterns said in words (any other pattern is quoted as it is); `empty`:
// the failure means nothing was given.
const PATTERN_WORDS: ReadonlyMap<string, { message: string; empty: boolean }> = new Map<
  string,
  { message: string; empty: boolean }
>([
  ['\\S', { message: 'must not be blank', empty: true }],
  [
    VISIBLE_PATTERN,
    { message: 'must not be blank (white space and invisible characters alone)', empty: true },
  ],
  ...[...CREDENTIAL_WORDS].map(
    ([pattern, message]) => [pattern, { message, empty: false }] as const,
  ),
]);

// The formats are registered here, once, for every schema either instance compiles.
const ajvPlain = new Ajv({
  formats: CREDENTIAL_FORMATS,
  allErrors: false,
  strict: true,
  allowUnionTypes: true,
  coerceTypes: false,
});
const ajvDefaults = new Ajv({
  formats: CREDENTIAL_FORMATS,
  allErrors: false,
  strict: true,
  coerceTypes: false,
  useDefaults: true,
  allowUnionTypes: true,
});

/** Compile a schema into a validator whose errors name fields in dotted form. */
export function compileValidator<T>(schema: object, options: Options = {}): Validator<T> {
  const ajv = options.useDefaults ? ajvDefaults : ajvPlain;
  const validate: ValidateFunction = ajv.compile(schema);
  const unknownLabel = options.unknownLabel ?? 'unknown field';
  return function check(value) {
    if (validate(value)) return { ok: true, value: value as T };
    const error = validate.errors?.[0];
    if (!error) return { ok: false, field: '', message: 'invalid', empty: false };
    return describe(error, unknownLabel);
  };
}

/** Turn a JSON pointer into the dotted path operators write in config files. */
export function dottedPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

/** Append a key to a dotted path. */
export function joinPath(base: string, key: string): string {
  return base ? `${base}.${key}` : key;
}

function describe(error: ErrorObject, unknownLabel: string): Invalid {
  const invalid = (field: string, message: string, empty = false): Invalid => ({
    ok: false,
    field,
    message,
    empty,
  });
  const at = dottedPath(error.instancePath);
  const params = error.params as Record<string, unknown>;
  // Errors inside propertyNames concern a key, not a value.
  if (error.propertyName !== undefined) {
    // A key of a shape said in words (a header's name).
    const words =
      error.keyword === 'pattern' ? PATTERN_WORDS.get(String(params['pattern'])) : undefined;
    if (words) return invalid(joinPath(at, error.propertyName), words.message);
    const allowed = error.keyword === 'enum' ? (params['allowedValues'] as unknown[]) : undefined;
    const hint = allowed ? ` (one of ${allowed.join(', ')})` : '';
    return invalid(joinPath(at, error.propertyName), `unknown name${hint}`);
  }
  switch (error.keyword) {
    case 'required': {
      const field = joinPath(at, String(params['missingProperty']));
      return invalid(field, 'is required', true);
    }
    case 'additionalProperties': {
      const field = joinPath(at, String(params['additionalProperty']));
      return invalid(field, unknownLabel);
    }
    case 'propertyNames':
      return invalid(joinPath(at, String(params['propertyName'])), 'unknown name');
    case 'enum': {
      const allowed = (params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v));
      return invalid(at, `must be one of ${allowed.join(', ')}`);
    }
    case 'const':
      return invalid(at, `must be ${JSON.stringify(params['allowedValue'])}`);
    case 'pattern': {
      const words = PATTERN_WORDS.get(String(params['pattern']));
      if (words) return invalid(at, words.message, words.empty);
      return invalid(at, `must match ${String(params['pattern'])}`);
    }
    case 'minLength':
      return invalid(at, 'must not be empty', true);
    case 'format': {
      // Told in words, never with the value (a URL may carry a password or a key).
      const format = String(params['format']);
      return invalid(at, FORMAT_WORDS.get(format) ?? `must be of the format ${format}`);
    }
    default:
      return invalid(at, error.message ?? 'is invalid');
  }
}

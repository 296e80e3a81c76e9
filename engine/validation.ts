/**
 * Schema validation with ajv: one instance, validators compiled once, and
 * ajv's errors turned into one readable line naming the offending field.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

/** Validates in place; returns the typed value or a message naming the first bad field. */
export type Validator<T> = (
  value: unknown,
) => { ok: true; value: T } | { ok: false; field: string; message: string };

type Options = { useDefaults?: boolean; unknownLabel?: string };

const ajvPlain = new Ajv({
  allErrors: false,
  strict: true,
  allowUnionTypes: true,
  coerceTypes: false,
});
const ajvDefaults = new Ajv({
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
    if (!error) return { ok: false, field: '', message: 'invalid' };
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

function describe(
  error: ErrorObject,
  unknownLabel: string,
): { ok: false; field: string; message: string } {
  const at = dottedPath(error.instancePath);
  const params = error.params as Record<string, unknown>;
  // Errors inside propertyNames concern a key, not a value.
  if (error.propertyName !== undefined) {
    const allowed = error.keyword === 'enum' ? (params['allowedValues'] as unknown[]) : undefined;
    const hint = allowed ? ` (one of ${allowed.join(', ')})` : '';
    return { ok: false, field: joinPath(at, error.propertyName), message: `unknown name${hint}` };
  }
  switch (error.keyword) {
    case 'required': {
      const field = joinPath(at, String(params['missingProperty']));
      return { ok: false, field, message: 'is required' };
    }
    case 'additionalProperties': {
      const field = joinPath(at, String(params['additionalProperty']));
      return { ok: false, field, message: unknownLabel };
    }
    case 'propertyNames':
      return {
        ok: false,
        field: joinPath(at, String(params['propertyName'])),
        message: 'unknown name',
      };
    case 'enum': {
      const allowed = (params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v));
      return { ok: false, field: at, message: `must be one of ${allowed.join(', ')}` };
    }
    case 'const':
      return { ok: false, field: at, message: `must be ${JSON.stringify(params['allowedValue'])}` };
    case 'pattern':
      if (params['pattern'] === '\\S')
        return { ok: false, field: at, message: 'must not be blank' };
      return { ok: false, field: at, message: `must match ${String(params['pattern'])}` };
    case 'minLength':
      return { ok: false, field: at, message: 'must not be empty' };
    default:
      return { ok: false, field: at, message: error.message ?? 'is invalid' };
  }
}

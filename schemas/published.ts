/**
 * The config schema as published for editors (`hookgate schema`,
 * schemas/hookgate.schema.json): schemas/config.ts with a draft-07 header, and
 * adjusted to what an editor sees, the file before loading. Loading fills
 * defaults, so a setting with a default is not required in the file; and
 * `${VAR}` is substituted before validation, so a pattern- or enum-checked
 * string may hold a reference instead (its value is checked at load time).
 */
import { configSchema } from './config.ts';
import { CREDENTIAL_FORMATS } from './credentials.ts';
import { VISIBLE_PATTERN } from './payloads.ts';

/** Identity of the published schema (a name, not a place to fetch it from). */
export const SCHEMA_ID = 'hookgate:config';

// A whole `${VAR}` reference, as engine/config.ts substitutes it.
const REFERENCE = { type: 'string', pattern: '^\\$\\{[A-Za-z_][A-Za-z0-9_]*\\}$' } as const;
const SAMPLE_REFERENCE = '${VAR}';

type Node = { [key: string]: unknown };

/** The JSON Schema document `hookgate schema` prints. */
export function publishedConfigSchema(): Node {
  const { $id: _id, ...body } = configSchema;
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: SCHEMA_ID,
    title: 'hookgate configuration',
    description:
      'hookgate.yaml: YAML or JSON. ${VAR} is replaced by an environment variable when the file is loaded.',
    ...(forEditors(body) as Node),
  };
}

function forEditors(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(forEditors);
  if (value === null || typeof value !== 'object') return value;
  const node: Node = {};
  for (const [key, item] of Object.entries(value)) node[key] = forEditors(item);
  const properties = node['properties'] as Record<string, Node> | undefined;
  if (Array.isArray(node['required']) && properties) {
    // Loading fills these in: an editor must not ask for them.
    node['required'] = (node['required'] as string[]).filter(
      (name) => properties[name]?.['default'] === undefined,
    );
    if ((node['required'] as string[]).length === 0) delete node['required'];
  }
  // Editors' validators may read a pattern without the `u` flag (or, in Python, not at all),
  // where `\p{…}` is not a Unicode property: they check "not blank", the loader the rest.
  if (node['pattern'] === VISIBLE_PATTERN) node['pattern'] = '\\S';
  // hookgate's own formats (a URL that parses) are unknown to an editor: the loader checks them.
  if (typeof node['format'] === 'string' && Object.hasOwn(CREDENTIAL_FORMATS, node['format']))
    delete node['format'];
  return refusesReference(node) ? { anyOf: [node, REFERENCE] } : node;
}

/** True for a string schema that the text `${VAR}` would fail (a pattern or an enum). */
function refusesReference(node: Node): boolean {
  const pattern = node['pattern'];
  if (node['type'] === 'string' && typeof pattern === 'string') {
    return !new RegExp(pattern, 'u').test(SAMPLE_REFERENCE);
  }
  const choices = node['enum'];
  return Array.isArray(choices) && choices.every((choice) => typeof choice === 'string');
}

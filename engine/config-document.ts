/**
 * Reading a config file into its document: the file's text, its `${VAR}`
 * references shielded, parsed as YAML. Light on purpose (no schema, no
 * validator): a reload reads the file in a worker thread (reload/read-config.ts),
 * which loads only this; config.ts validates the document.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';

/** A configuration problem, reported as `path: message` and exit status 2. */
export class ConfigError extends Error {
  readonly path: string;
  constructor(pathName: string, message: string) {
    super(pathName ? `${pathName}: ${message}` : message);
    this.name = 'ConfigError';
    this.path = pathName;
  }
}

/** Read and parse a config file, `${VAR}` references not yet substituted (see substituteEnv). */
export function readConfigDocument(file: string): { absolute: string; raw: unknown } {
  const absolute = path.resolve(file);
  let text: string;
  try {
    text = readFileSync(absolute, 'utf8');
  } catch (err) {
    throw new ConfigError(
      '',
      `cannot read config file ${absolute}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
  let raw: unknown;
  try {
    raw = parseYaml(shieldReferences(text), { prettyErrors: true, uniqueKeys: true });
  } catch (err) {
    // The first line has the reason and where ("... at line 2, column 6:"); the rest quotes the file.
    const reason = ((err as Error).message.split('\n')[0] ?? '').replace(/:$/, '');
    throw new ConfigError('', `cannot parse ${absolute}: ${reason}`);
  }
  return { absolute, raw: raw ?? {} };
}

/**
 * `${NAME}` contains YAML flow indicators, so `{ token: ${TOKEN} }` would not parse. Before
 * parsing, each reference becomes a plain-scalar placeholder; values are substituted after
 * parsing, into strings only, so an environment value can never add YAML structure.
 */
export function shieldReferences(text: string): string {
  return text.replace(
    /(\$?)\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g,
    (match, escaped: string, name: string) =>
      escaped ? match : `hookgate.env.${name}.placeholder`,
  );
}

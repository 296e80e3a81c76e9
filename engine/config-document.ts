/**
 * Reading a config file into its document: the file's text, its `${VAR}`
 * references shielded, parsed as YAML. Light on purpose (no schema, no
 * validator): a reload reads the file in a worker thread (reload/read-config.ts),
 * which loads only this; config.ts validates the document.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { documentProblem, yamlProblem } from './config/yaml-problem.ts';

/** A configuration problem, reported as `path: message` and exit status 2. */
export class ConfigError extends Error {
  readonly path: string;
  constructor(pathName: string, message: string) {
    super(pathName ? `${pathName}: ${message}` : message);
    this.name = 'ConfigError';
    this.path = pathName;
  }
}

/**
 * Largest config file read: real ones are a few KB. A bigger one (a path replaced by a large or
 * sparse file) would be read whole into the process's memory before any parser could refuse it.
 */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

function tooLarge(absolute: string, size: number | string): ConfigError {
  return new ConfigError(
    '',
    `config file ${absolute} is ${size} bytes; at most ${MAX_CONFIG_BYTES} are read`,
  );
}

function cannotRead(absolute: string, err: unknown): ConfigError {
  if (err instanceof ConfigError) return err;
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  return new ConfigError('', `cannot read config file ${absolute}: ${code}`);
}

// Bytes read at a time: a config of a few KB costs a few KB.
const READ_PIECE = 64 * 1024;

/**
 * A config file's text, read on this thread (serve and check: nothing is served yet). A pipe
 * (`--config /dev/stdin`, a process substitution) is read too, to MAX_CONFIG_BYTES at most.
 */
export function readConfigText(absolute: string): string {
  let fd: number | undefined;
  try {
    fd = openSync(absolute, 'r');
    const stat = fstatSync(fd);
    if (stat.isFile() && stat.size > MAX_CONFIG_BYTES) throw tooLarge(absolute, stat.size);
    // Read in pieces and counted: a file that grew after the check, or a pipe, is bounded too,
    // and a config of a few KB costs a few KB.
    const piece = Buffer.allocUnsafe(READ_PIECE);
    const pieces: Buffer[] = [];
    let length = 0;
    for (;;) {
      const read = readSync(fd, piece, 0, piece.length, null);
      if (read === 0) break;
      length += read;
      if (length > MAX_CONFIG_BYTES) throw tooLarge(absolute, `more than ${MAX_CONFIG_BYTES}`);
      pieces.push(Buffer.from(piece.subarray(0, read)));
    }
    return Buffer.concat(pieces, length).toString('utf8');
  } catch (err) {
    throw cannotRead(absolute, err);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * A config file's text for a reload, read without holding the event loop: opened once without
 * blocking (a FIFO or device put at the path opens at once and is refused by its type, rather
 * than holding the reader in open(2) for ever) and checked as opened, never reopened by name: a
 * regular file of at most MAX_CONFIG_BYTES.
 */
export async function readConfigTextAsync(absolute: string): Promise<string> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(absolute, constants.O_RDONLY | constants.O_NONBLOCK);
    const stat = await handle.stat();
    if (!stat.isFile()) throw new ConfigError('', `config file ${absolute} is not a regular file`);
    if (stat.size > MAX_CONFIG_BYTES) throw tooLarge(absolute, stat.size);
    // In pieces up to the bound, not readFile: a file that grows after the check (or reports
    // no size) would be read whole.
    const pieces: Buffer[] = [];
    let length = 0;
    for (;;) {
      const { bytesRead, buffer } = await handle.read(
        Buffer.allocUnsafe(READ_PIECE),
        0,
        READ_PIECE,
      );
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > MAX_CONFIG_BYTES) throw tooLarge(absolute, `more than ${MAX_CONFIG_BYTES}`);
      pieces.push(buffer.subarray(0, bytesRead));
    }
    return Buffer.concat(pieces, length).toString('utf8');
  } catch (err) {
    throw cannotRead(absolute, err);
  } finally {
    await handle?.close();
  }
}

/** Read and parse a config file, `${VAR}` references not yet substituted (see substituteEnv). */
export function readConfigDocument(file: string): { absolute: string; raw: unknown } {
  const absolute = path.resolve(file);
  return parseConfigDocument(absolute, readConfigText(absolute));
}

/** Parse a config file's text (its path names it in errors). */
export function parseConfigDocument(
  absolute: string,
  text: string,
): { absolute: string; raw: unknown } {
  const refuse = (reason: string) => new ConfigError('', `cannot parse ${absolute}: ${reason}`);
  // Silent: the library would hand a warning (an unknown tag such as `!secret`) to
  // process.emitWarning, which prints the offending line, secret and all, on stderr.
  const lineCounter = new LineCounter();
  const doc = parseDocument(shieldReferences(text), {
    prettyErrors: true,
    uniqueKeys: true,
    logLevel: 'silent',
    lineCounter,
  });
  // A warning is refused too: an unknown tag is dropped, and `token: !ENV NAME` would run
  // with the literal text as the token.
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) throw refuse(yamlProblem(problem));
  // What the library reads without complaint but hookgate refuses: an alias naming no anchor,
  // an anchor or a tag on a secret, an anchor no alias uses (yaml-problem.ts).
  const unread = documentProblem(doc, lineCounter);
  if (unread) throw refuse(unread);
  let raw: unknown;
  try {
    raw = doc.toJS();
  } catch {
    // The library's alias bound (a billion-laughs document), or a nesting too deep to walk.
    throw refuse('its values cannot be built (aliases that expand too far, or nesting too deep)');
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

// What shieldReferences makes of `${NAME}`: read back by the loader and by setup's edits.
const SHIELDED = /hookgate\.env\.([A-Za-z_][A-Za-z0-9_]*)\.placeholder/g;

/** The shielded references of `text` given back as written (`${NAME}`). */
export function unshieldReferences(text: string): string {
  return text.replace(SHIELDED, (_match, name: string) => `\${${name}}`);
}

/** Each shielded reference of `text` replaced by what `value` gives for its name. */
export function replaceShielded(text: string, value: (name: string) => string): string {
  return text.replace(SHIELDED, (_match, name: string) => value(name));
}

/** Whether `text` holds a shielded reference. */
export function holdsShieldedReference(text: string): boolean {
  SHIELDED.lastIndex = 0;
  return SHIELDED.test(text);
}

/**
 * The configuration half of `hookgate gmail setup`: the config file's text in, the text with
 * `hooks.enabled`, the `gmail` preset and the `hooks.gmail` block set out. It edits the YAML
 * document (yaml's Document API), so comments, key order and untouched values survive. A value
 * written as a `${VAR}` reference is never overwritten: when the wanted value may differ, the
 * key is reported as a conflict instead, so setup never puts a secret where a reference was.
 * OAuth client secrets and refresh tokens are never written (they live in the environment or
 * the data directory). Pure: no file, no clock; only the push token's randomness.
 */
import { randomBytes } from 'node:crypto';
import { type Document, isMap, isScalar, isSeq, parseDocument } from 'yaml';
import { yamlProblem } from '../config/yaml-problem.ts';
import { ConfigError, shieldReferences } from '../config.ts';
import { holdsShieldedReference, replaceShielded, unshieldReferences } from '../config-document.ts';

/** What setup writes into `hooks.gmail`; keys left undefined are not touched. */
export type GmailSetupOptions = {
  account: string;
  label?: string;
  topic?: string;
  subscription?: string;
  /** The push secret (push.mode token); generated when neither given nor configured. */
  pushToken?: string;
  includeBody?: boolean;
  maxBytes?: number;
  renewEveryMinutes?: number;
  serve?: { bind?: string; port?: number; path?: string };
  push?: { mode?: 'oidc' | 'token'; audience?: string; serviceAccountEmail?: string };
  /** `clientSecretEnv`: the variable that holds the client secret, written as `${NAME}`. */
  oauth?: { clientId?: string; clientSecretEnv?: string };
  /** Values of `${VAR}` references, to tell whether a kept reference already says what is wanted. */
  env?: Readonly<Record<string, string | undefined>>;
};

/** A key kept as a `${VAR}` reference although setup wanted a value it cannot confirm. */
export type SetupConflict = { path: string; reference: string };

/** The new file text, and what the caller should tell the operator. */
export type GmailSetupResult = {
  text: string;
  changed: boolean;
  /** Set when setup made a push token: the operator needs it for the subscription URL. */
  generatedPushToken?: string;
  conflicts: SetupConflict[];
  /** Paths of OAuth secrets found as plain text in the file (better as `${VAR}`). */
  plainSecrets: string[];
};

type Scalar = string | number | boolean;
type Edit = { doc: Document; env: GmailSetupOptions['env']; conflicts: SetupConflict[] };

const GMAIL = ['hooks', 'gmail'];

/** Set up `hooks` for the Gmail flow in a config file's text. */
export function writeGmailSetup(yamlText: string, options: GmailSetupOptions): GmailSetupResult {
  const doc = parseConfig(yamlText);
  const edit: Edit = { doc, env: options.env, conflicts: [] };
  ensureMap(edit, ['hooks']);
  setValue(edit, ['hooks', 'enabled'], true);
  addPreset(edit);
  ensureMap(edit, GMAIL);
  const generatedPushToken = pushTokenToWrite(edit, options);
  const pushToken = options.pushToken ?? generatedPushToken;
  for (const [key, value] of gmailEntries({ ...options, pushToken })) {
    if (key.length > 1) ensureMap(edit, [...GMAIL, ...key.slice(0, -1)]);
    setValue(edit, [...GMAIL, ...key], value);
  }
  const text = render(doc, yamlText);
  return {
    text,
    changed: text !== yamlText,
    ...(generatedPushToken === undefined ? {} : { generatedPushToken }),
    conflicts: edit.conflicts,
    plainSecrets: plainSecrets(doc),
  };
}

function parseConfig(yamlText: string): Document {
  // The loader's own shielding, so `{ token: ${TOKEN} }` parses here exactly as at boot.
  const doc = parseDocument(shieldReferences(yamlText), { uniqueKeys: true });
  const error = doc.errors[0];
  if (error !== undefined) {
    throw new ConfigError('', `cannot parse the config file: ${yamlProblem(error)}`);
  }
  if (doc.contents === null) doc.contents = doc.createNode({}) as unknown as typeof doc.contents;
  if (!isMap(doc.contents)) throw new ConfigError('', 'the config file must hold a mapping');
  return doc;
}

// The options as [path under hooks.gmail, value] pairs, in the schema's key order.
function gmailEntries(options: GmailSetupOptions): [string[], Scalar][] {
  const entries: [string[], Scalar | undefined][] = [
    [['account'], options.account],
    [['label'], options.label],
    [['topic'], options.topic],
    [['subscription'], options.subscription],
    [['pushToken'], options.pushToken],
    [['includeBody'], options.includeBody],
    [['maxBytes'], options.maxBytes],
    [['renewEveryMinutes'], options.renewEveryMinutes],
    [['serve', 'bind'], options.serve?.bind],
    [['serve', 'port'], options.serve?.port],
    [['serve', 'path'], options.serve?.path],
    [['oauth', 'clientId'], options.oauth?.clientId],
    [['oauth', 'clientSecret'], referenceTo(options.oauth?.clientSecretEnv)],
    [['push', 'mode'], options.push?.mode],
    [['push', 'audience'], options.push?.audience],
    [['push', 'serviceAccountEmail'], options.push?.serviceAccountEmail],
  ];
  return entries.filter((entry): entry is [string[], Scalar] => entry[1] !== undefined);
}

// A token whenever none is configured: token mode needs it, and an OIDC setup can fall back to it
// (or add it to the push URL as a second check) without another setup run.
function pushTokenToWrite(edit: Edit, options: GmailSetupOptions): string | undefined {
  if (options.pushToken !== undefined) return undefined;
  const existing = edit.doc.getIn([...GMAIL, 'pushToken'], true);
  if (existing !== undefined && !(isScalar(existing) && existing.value === null)) return undefined;
  return randomBytes(32).toString('base64url');
}

function ensureMap(edit: Edit, path: string[]): void {
  const node = edit.doc.getIn(path, true);
  if (isMap(node)) return;
  if (node === undefined || node === null || (isScalar(node) && node.value === null)) {
    // createNode, not new YAMLMap(): a map made with the document's schema can grow keys below it.
    edit.doc.setIn(path, edit.doc.createNode({}));
    return;
  }
  throw new ConfigError(path.join('.'), 'must be a mapping for the Gmail flow');
}

function addPreset(edit: Edit): void {
  const path = ['hooks', 'presets'];
  const node = edit.doc.getIn(path, true);
  if (node === undefined || (isScalar(node) && node.value === null)) {
    edit.doc.setIn(path, edit.doc.createNode(['gmail']));
    return;
  }
  if (!isSeq(node)) throw new ConfigError('hooks.presets', 'must be a list of preset names');
  const present = node.items.some((item) => isScalar(item) && item.value === 'gmail');
  if (!present) node.add(edit.doc.createNode('gmail'));
}

/**
 * A reference to an environment variable as the parsed document holds one (rendered `${NAME}`):
 * a secret is only ever written so, never its value.
 */
function referenceTo(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    throw new ConfigError('--client-secret-env', 'must be the name of an environment variable');
  return shieldReferences(`\${${name}}`);
}

// One value: kept when equal, kept (and reported) when a reference, else written.
function setValue(edit: Edit, path: string[], value: Scalar): void {
  const node = edit.doc.getIn(path, true);
  if (node !== undefined && !isScalar(node)) {
    throw new ConfigError(path.join('.'), 'must be a single value, not a mapping or list');
  }
  if (isScalar(node) && node.value === value) return;
  // A reference over a reference: the new one is written (no value changes hands).
  const newReference = typeof value === 'string' && holdsShieldedReference(value);
  if (
    !newReference &&
    isScalar(node) &&
    typeof node.value === 'string' &&
    holdsShieldedReference(node.value)
  ) {
    keepReference(edit, path, node.value, value);
    return;
  }
  if (isScalar(node) && node.value === value) return;
  if (isScalar(node)) node.value = value;
  else edit.doc.setIn(path, value);
}

function keepReference(edit: Edit, path: string[], shielded: string, value: Scalar): void {
  const reference = unshieldReferences(shielded);
  if (reference === String(value)) return;
  let unresolved = false;
  const resolved = replaceShielded(shielded, (name) => {
    const found = edit.env?.[name];
    if (found === undefined) unresolved = true;
    return found ?? '';
  });
  if (unresolved || resolved !== String(value)) {
    edit.conflicts.push({ path: path.join('.'), reference });
  }
}

function plainSecrets(doc: Document): string[] {
  return ['clientSecret', 'refreshToken']
    .map((key) => [...GMAIL, 'oauth', key])
    .filter((path) => {
      const value = doc.getIn(path);
      return typeof value === 'string' && !holdsShieldedReference(value);
    })
    .map((path) => path.join('.'));
}

// JSON stays JSON (the loader reads both); YAML keeps its comments and layout.
function render(doc: Document, original: string): string {
  const root = doc.contents;
  const json = isMap(root) && root.flow === true && /^\s*\{/.test(original);
  const text = json
    ? `${JSON.stringify(doc.toJS(), null, 2)}\n`
    : doc.toString({ lineWidth: 0, indent: indentOf(original) });
  return unshieldReferences(text);
}

// The file's own indentation step (2 when it has none or an odd one).
function indentOf(text: string): number {
  const match = /^( +)\S/m.exec(text);
  const width = match?.[1]?.length ?? 2;
  return width >= 2 && width <= 8 ? width : 2;
}

/**
 * A YAML parse problem told in hookgate's words, never the library's: its
 * message quotes the text at fault, and an unquoted secret that starts with
 * `!`, `*`, `&` or `|` (as password generators make them) is itself the tag,
 * alias, anchor or block header it names. The reason comes from the
 * problem's code, the place from its position; nothing of the file's text.
 * Also the problems the library reads without complaint that turn a secret
 * into something else: a tag on a secret's value, an anchor no alias uses.
 * Pure.
 */
import {
  type Document,
  type ErrorCode,
  isAlias,
  isPair,
  isScalar,
  isSeq,
  type LineCounter,
  type Node,
  visit,
  type visitorFn,
  YAMLError,
} from 'yaml';
import { holdsSecret } from './credential-settings.ts';

const UNRESOLVED_ALIAS =
  'an alias (a value starting with *) names no anchor set before it; quote a value that starts with *';

const REASONS: Readonly<Record<ErrorCode, string>> = {
  ALIAS_PROPS: 'an alias cannot have a tag or an anchor',
  BAD_ALIAS:
    'an alias (a value starting with *) names no anchor set before it; quote a value that starts with *',
  BAD_DIRECTIVE: 'a directive (a line starting with %) is not valid',
  BAD_DQ_ESCAPE: 'a double-quoted value holds an escape sequence YAML does not have',
  BAD_INDENT: 'the indentation is not valid here',
  BAD_PROP_ORDER: 'an anchor or a tag is out of place',
  BAD_SCALAR_START: 'a plain value cannot start with this character; quote it',
  BLOCK_AS_IMPLICIT_KEY: 'a block cannot be a key',
  BLOCK_IN_FLOW: 'a block value cannot be inside { } or [ ]',
  DUPLICATE_KEY: 'a key is repeated in the same mapping',
  IMPOSSIBLE: 'the document cannot be read',
  KEY_OVER_1024_CHARS: 'a key is longer than 1024 characters',
  MISSING_CHAR: 'a closing character (a quote, } or ]) is missing',
  MULTILINE_IMPLICIT_KEY: 'a key cannot span lines',
  MULTIPLE_ANCHORS: 'a value has more than one anchor',
  MULTIPLE_DOCS: 'the file holds more than one YAML document',
  MULTIPLE_TAGS: 'a value has more than one tag',
  NON_STRING_KEY: 'a key is not a plain string',
  RESOURCE_EXHAUSTION: 'the document expands beyond what is read (too many aliases)',
  TAB_AS_INDENT: 'a tab is used for indentation',
  TAG_RESOLVE_FAILED:
    'a YAML tag (a value starting with !) is not one the loader reads; quote a value that starts with !',
  UNEXPECTED_TOKEN: 'unexpected text here (a value starting with |, >, @ or ` may need quotes)',
  BAD_COLLECTION_TYPE: 'a tag does not fit the collection it is on',
};

/** What is wrong and where (`reason at line L, column C`), from a problem the yaml library raised. */
export function yamlProblem(err: unknown): string {
  if (!(err instanceof YAMLError)) return 'the document cannot be read as YAML';
  const reason = REASONS[err.code] ?? 'the document is not valid YAML';
  const at = err.linePos?.[0];
  return at ? `${reason} at line ${at.line}, column ${at.col}` : reason;
}

/** The problems of a document the library reads without complaint, by hookgate's own code. */
const OWN_REASONS = {
  UNRESOLVED_ALIAS,
  SECRET_ANCHOR:
    "starts with an anchor (&) that no alias uses: YAML takes the text from & to the first space as the anchor's name, not as part of the secret; write a secret quoted, with no anchor",
  SECRET_TAG:
    'starts with a tag (!): YAML takes the text from ! to the first space as the tag, not as part of the secret; write a secret quoted, with no tag',
  UNUSED_ANCHOR:
    'an anchor (a value starting with &) is used by no alias (*): YAML took the text from & to the first space as its name, not as part of the value; quote a value that starts with &, or remove the anchor',
} as const;

type Ancestors = Parameters<visitorFn<unknown>>[2];

/** An anchor's definition: its place, whether an alias used it, the secret setting it is on. */
type Anchor = { at: number; used: boolean; secret?: string };

/**
 * The first problem of a document that the library reads without complaint, as a problem with
 * its place (and its setting, for a secret), found in one walk in the order the library
 * resolves anchors:
 * - an alias that names no anchor before it (the library raises it only when it builds the
 *   values, with the alias's name, the text, in its message);
 * - a tag on a secret's value (holdsSecret): `token: !!str rest` is a tag on "rest";
 * - else an anchor no alias uses, told by its setting when it is on a secret's value:
 *   `token: &abc rest` is an anchor named "abc" on "rest", the secret silently its tail; an
 *   anchor is there to be aliased, so one that is not is most likely the first word of a value
 *   so swallowed, in whatever setting. An anchored secret an alias uses is a secret reused on
 *   purpose (two routes with one signing secret) and loads.
 * Neither a value nor a name is told.
 */
export function documentProblem(doc: Document, lines: LineCounter): string | undefined {
  // Each anchor name's latest definition (an alias names the latest before it).
  const latest = new Map<string, Anchor>();
  // The first anchor found unused (at a later definition of its name, or at the end).
  let unused: Anchor | undefined;
  const noteUnused = (anchor: Anchor) => {
    if (!anchor.used && (!unused || anchor.at < unused.at)) unused = anchor;
  };
  let found: { reason: string; at: number } | undefined;
  visit(doc, {
    Node(key, node, ancestors) {
      if (isAlias(node)) {
        const anchor = latest.get(node.source);
        if (anchor) {
          anchor.used = true;
          return undefined;
        }
        found = { reason: OWN_REASONS.UNRESOLVED_ALIAS, at: node.range?.[0] ?? 0 };
        return visit.BREAK;
      }
      const onValue = isScalar(node) && key !== 'key';
      const setting = onValue && (node.anchor || node.tag) ? settingOf(ancestors, node) : '';
      const secret = setting !== '' && holdsSecret(setting);
      if (secret && node.tag) {
        found = {
          reason: `the value of ${setting} ${OWN_REASONS.SECRET_TAG}`,
          at: placeOf(ancestors, node),
        };
        return visit.BREAK;
      }
      if (node.anchor) {
        const before = latest.get(node.anchor);
        if (before) noteUnused(before);
        latest.set(node.anchor, {
          at: placeOf(ancestors, node),
          used: false,
          ...(secret && { secret: setting }),
        });
      }
      return undefined;
    },
  });
  if (!found) {
    for (const anchor of latest.values()) noteUnused(anchor);
    const first = unused as Anchor | undefined;
    if (first)
      found = {
        reason: first.secret
          ? `the value of ${first.secret} ${OWN_REASONS.SECRET_ANCHOR}`
          : OWN_REASONS.UNUSED_ANCHOR,
        at: first.at,
      };
  }
  if (!found) return undefined;
  const { line, col } = lines.linePos(found.at);
  return `${found.reason} at line ${line}, column ${col}`;
}

/** The dotted setting a value of the document stands at (`hooks.mappings.0.auth.secrets.1`). */
function settingOf(ancestors: Ancestors, node: Node): string {
  const parts: string[] = [];
  for (const [i, ancestor] of ancestors.entries()) {
    if (isPair(ancestor)) parts.push(isScalar(ancestor.key) ? String(ancestor.key.value) : '?');
    else if (isSeq(ancestor)) parts.push(String(ancestor.items.indexOf(ancestors[i + 1] ?? node)));
  }
  return parts.join('.');
}

/**
 * Where to point for a value's anchor or tag: its setting's key (on the anchor's line as
 * written `key: &name value`; the value's own range starts after the anchor, on a later line
 * for a block value), or the value itself in a list.
 */
function placeOf(ancestors: Ancestors, node: Node): number {
  const parent = ancestors.at(-1);
  const key = isPair(parent) && parent.value === node ? parent.key : undefined;
  return (isScalar(key) ? key.range?.[0] : undefined) ?? node.range?.[0] ?? 0;
}

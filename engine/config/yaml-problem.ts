/**
 * A YAML parse problem told in hookgate's words, never the library's: its
 * message quotes the text at fault, and an unquoted secret that starts with
 * `!`, `*`, `&` or `|` (as password generators make them) is itself the tag,
 * alias, anchor or block header it names. The reason comes from the
 * problem's code, the place from its position; nothing of the file's text.
 * Pure.
 */
import { type Document, type ErrorCode, isAlias, type LineCounter, visit, YAMLError } from 'yaml';

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

/**
 * The first alias that names no anchor before it, as a problem with its place. The library
 * raises it only when it builds the values, with the alias's name (the text) in its message;
 * found here in one walk of the document, anchors gathered in the order it resolves them.
 */
export function unresolvedAlias(doc: Document, lines: LineCounter): string | undefined {
  const anchors = new Set<string>();
  let offset: number | undefined;
  visit(doc, {
    Node(_key, node) {
      if (isAlias(node)) {
        if (anchors.has(node.source)) return undefined;
        offset = node.range?.[0] ?? 0;
        return visit.BREAK;
      }
      if (node.anchor) anchors.add(node.anchor);
      return undefined;
    },
  });
  if (offset === undefined) return undefined;
  const { line, col } = lines.linePos(offset);
  return `${UNRESOLVED_ALIAS} at line ${line}, column ${col}`;
}

/**
 * Compiling mappings at boot: the user's `hooks.mappings` followed by the
 * presets named in `hooks.presets`. Conditions and templates are compiled
 * once, static values are checked against the same policy requests face,
 * and every problem is a ConfigError naming the mapping id and the field.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { RouteAuth } from '../schemas/auth.ts';
import type { Config } from '../schemas/config.ts';
import { type Mapping, TEMPLATE_FIELDS, type TemplateField } from '../schemas/mapping.ts';
import type { Provenance } from './actions.ts';
import { type Condition, compileCondition, RuleError } from './conditions.ts';
import { ConfigError } from './config.ts';
import { mappingSources } from './mapping-sources.ts';
import { HookError } from './errors.ts';
import {
  checkRecipient,
  checkRecipientAllowed,
  type Policy,
  resolveAgentId,
  resolveChannel,
  resolveModel,
  resolveSessionKey,
} from './policy.ts';
import {
  compileSessionKeyTemplate,
  isTemplated,
  type SessionKeyTemplate,
} from './session-key-template.ts';
import { ContainmentError, MODULE_EXTENSIONS, resolveContained } from './sandbox/paths.ts';
import type { ModuleSpec } from './sandbox/protocol.ts';
import { compileTemplate, type Template, templateErrorText } from './templates.ts';

/** Fields other than the session key: a literal value or a compiled template. */
export type FieldPlan = Partial<Record<Exclude<TemplateField, 'sessionKey'>, string | Template>>;

export type CompiledMapping = {
  id: string;
  /** Where it was configured, e.g. `hooks.mappings.0` or `hooks.presets.0`. */
  at: string;
  path: string | undefined;
  source: string | undefined;
  when: Condition | undefined;
  /** The rule as configured, for `check` and `test`. */
  whenRule: unknown;
  /** ignore: the request is answered 200 and nothing is stored or run. */
  kind: 'wake' | 'agent' | 'ignore';
  fields: FieldPlan;
  sessionKey:
    | { static: string }
    | { template: SessionKeyTemplate; whenEmpty: 'refuse' | 'default' }
    | undefined;
  deliver: boolean | undefined;
  timeoutSeconds: number | undefined;
  forEach: string | undefined;
  provenance: Provenance;
  /** The sandboxed transform module, when the mapping has one. */
  transform: ModuleSpec | undefined;
  /** How requests to its path are authenticated, as configured (routes compile it). */
  auth: RouteAuth | undefined;
  /** Where that auth block was configured (a preset's: its settings, e.g. `hooks.github.auth`). */
  authAt: string;
  /** The delivery-id template, as configured (routes compile it). */
  idempotencyKey: string | undefined;
};

/** Where transform modules may come from. */
export type TransformPlaces = { root: string; dir: string };

/** The effective transforms directory: hooks.transformsDir inside the root, else the root. */
export function transformPlaces(root: string, transformsDir: string | undefined): TransformPlaces {
  if (transformsDir === undefined) return { root, dir: root };
  try {
    return { root, dir: resolveContained(root, root, transformsDir) };
  } catch (err) {
    if (err instanceof ContainmentError) {
      throw new ConfigError('hooks.transformsDir', `${err.message} (the root is ${root})`);
    }
    throw err;
  }
}

// Fields a preset takes from hooks.<name>.
const PRESET_SETTINGS: ReadonlySet<string> = new Set([
  'model',
  'thinking',
  'agentId',
  'channel',
  'to',
]);

const BUILT_IN_HOOKS: ReadonlySet<string> = new Set(['wake', 'agent']);

/** Compile the user's mappings and the enabled presets, in matching order. */
export function compileMappings(
  config: Config,
  policy: Policy,
  transformsRoot: string,
): CompiledMapping[] {
  const hooks = config.hooks;
  // Checked whenever it is set, used or not: a setting that escapes the root is wrong either way.
  const places = transformPlaces(transformsRoot, hooks.transformsDir);
  const entries = mappingSources(hooks);

  const seen = new Map<string, string>();
  return entries.map(({ mapping, at, fallbackId, settingsAt }) => {
    const id = mapping.id ?? fallbackId;
    const other = seen.get(id);
    if (other) throw new ConfigError(`${at}.id`, `duplicate mapping id "${id}" (also ${other})`);
    seen.set(id, at);
    // Refused at boot, not answered 400 to every sender of a request it maps.
    if (mapping.timeoutSeconds !== undefined && mapping.timeoutSeconds > hooks.maxTimeoutSeconds) {
      throw new ConfigError(
        `${at}.timeoutSeconds`,
        `(mapping "${id}") must be at most ${hooks.maxTimeoutSeconds} (hooks.maxTimeoutSeconds)`,
      );
    }
    return compileMapping(mapping, id, at, policy, places, settingsAt);
  });
}

function compileMapping(
  mapping: Mapping,
  id: string,
  at: string,
  policy: Policy,
  places: TransformPlaces | undefined,
  settingsAt?: string,
): CompiledMapping {
  // A preset's agent settings come from the deployment's (e.g. hooks.gmail): blame those.
  const fail = (field: string, message: string): never => {
    const where = settingsAt && PRESET_SETTINGS.has(field) ? settingsAt : at;
    throw new ConfigError(`${where}.${field}`, `(mapping "${id}") ${message}`);
  };
  const path = mapping.match?.path;
  if (path !== undefined && BUILT_IN_HOOKS.has(path))
    fail('match.path', `"${path}" is a built-in endpoint`);
  const kind = mapping.action ?? 'agent';
  const sources = collectSources(mapping, fail);
  const fields = compileFields(sources, fail);
  const textField = kind === 'agent' ? 'message' : 'text';
  const transform =
    mapping.transform && places ? transformSpec(mapping, id, places, fail) : undefined;
  const needsText = kind !== 'ignore' && transform === undefined;
  if (needsText && fields.message === undefined && fields.text === undefined) {
    fail(
      `templates.${textField}`,
      `a ${kind} mapping needs a ${textField} (templates.${textField} or ${textField})`,
    );
  }
  checkStaticPolicy(fields, policy, fail);
  return {
    id,
    at,
    path,
    source: mapping.match?.source,
    when: compileWhen(mapping.match?.when, fail),
    whenRule: mapping.match?.when,
    kind,
    fields,
    sessionKey: compileSessionKey(sources.sessionKey, mapping.sessionKeyWhenEmpty, policy, fail),
    deliver: mapping.deliver,
    timeoutSeconds: mapping.timeoutSeconds,
    forEach: mapping.forEach,
    provenance: {
      sessionKeySource: 'mapping',
      wrap: mapping.allowUnsafeExternalContent !== true,
      label: mapping.label ?? 'Webhook',
      mappingId: id,
    },
    transform,
    auth: mapping.auth,
    authAt: settingsAt ? `${settingsAt}.auth` : `${at}.auth`,
    idempotencyKey: mapping.idempotencyKey,
  };
}

/** Check a transform reference at boot: contained, a module file, present. */
function transformSpec(
  mapping: Mapping,
  id: string,
  places: TransformPlaces,
  fail: Fail,
): ModuleSpec {
  const { module, export: exportName } = mapping.transform as { module: string; export?: string };
  if (mapping.forEach !== undefined) {
    fail(
      'forEach',
      'a transform mapping cannot use forEach; return an array from the transform instead',
    );
  }
  let file: string;
  try {
    file = resolveContained(places.dir, places.dir, module);
  } catch (err) {
    if (err instanceof ContainmentError) return fail('transform.module', err.message);
    throw err;
  }
  if (!MODULE_EXTENSIONS.has(path.extname(file))) {
    fail('transform.module', `"${module}" must be a .js, .mjs, .ts or .mts module`);
  }
  if (!existsSync(file)) fail('transform.module', `"${module}" not found in ${places.dir}`);
  return {
    key: id,
    mappingId: id,
    root: places.dir,
    file,
    ...(exportName !== undefined && { exportName }),
  };
}

type Fail = (field: string, message: string) => never;
type Source = { value: string; field: string };

/** Each action field's source text and where it was configured; templates win over plain values. */
function collectSources(mapping: Mapping, fail: Fail): Partial<Record<TemplateField, Source>> {
  const sources: Partial<Record<TemplateField, Source>> = {};
  for (const field of TEMPLATE_FIELDS) {
    const plain = mapping[field];
    if (plain !== undefined) sources[field] = { value: plain, field };
  }
  const aliases = [
    ['message', 'messageTemplate', mapping.messageTemplate],
    ['text', 'textTemplate', mapping.textTemplate],
  ] as const;
  for (const [field, alias, value] of aliases) {
    if (value === undefined) continue;
    if (mapping.templates?.[field] !== undefined)
      fail(alias, `give templates.${field} or ${alias}, not both`);
    sources[field] = { value, field: alias };
  }
  for (const field of TEMPLATE_FIELDS) {
    const value = mapping.templates?.[field];
    if (value !== undefined) sources[field] = { value, field: `templates.${field}` };
  }
  return sources;
}

function compileFields(sources: Partial<Record<TemplateField, Source>>, fail: Fail): FieldPlan {
  const plan: FieldPlan = {};
  for (const field of TEMPLATE_FIELDS) {
    const source = sources[field];
    if (field === 'sessionKey' || source === undefined) continue;
    if (!isTemplated(source.value)) {
      plan[field] = source.value;
      continue;
    }
    try {
      plan[field] = compileTemplate(source.value);
    } catch (err) {
      fail(source.field, templateErrorText(err));
    }
  }
  return plan;
}

function compileWhen(rule: unknown, fail: Fail): Condition | undefined {
  if (rule === undefined) return undefined;
  try {
    return compileCondition(rule);
  } catch (err) {
    if (err instanceof RuleError) fail(err.at ? `match.when.${err.at}` : 'match.when', err.message);
    throw err;
  }
}

function compileSessionKey(
  source: Source | undefined,
  whenEmpty: 'refuse' | 'default' | undefined,
  policy: Policy,
  fail: Fail,
): CompiledMapping['sessionKey'] {
  if (whenEmpty === 'default' && (source === undefined || !isTemplated(source.value)))
    fail('sessionKeyWhenEmpty', 'applies only to a templated sessionKey (one with {{...}})');
  if (source === undefined) return undefined;
  if (!isTemplated(source.value)) {
    try {
      resolveSessionKey(policy, { key: source.value, source: 'mapping' }, () => '');
    } catch (err) {
      fail(source.field, (err as Error).message);
    }
    return { static: source.value };
  }
  let template: SessionKeyTemplate;
  try {
    template = compileSessionKeyTemplate(source.value);
  } catch (err) {
    return fail(source.field, templateErrorText(err));
  }
  const prefixes = policy.allowedSessionKeyPrefixes;
  if (prefixes && !prefixes.some((p) => template.prefix.startsWith(p))) {
    fail(
      source.field,
      `the namespace "${template.prefix}" is outside hooks.allowedSessionKeyPrefixes`,
    );
  }
  return { template, whenEmpty: whenEmpty ?? 'refuse' };
}

/** Static agent, model and channel values face the request policy now, not per request. */
function checkStaticPolicy(fields: FieldPlan, policy: Policy, fail: Fail): void {
  const checks = [
    ['agentId', (v: string) => resolveAgentId(policy, v)],
    ['model', (v: string) => resolveModel(policy, v)],
    ['channel', (v: string) => resolveChannel(policy, v)],
    // A static recipient on a static channel is checked against the channel's form and the
    // recipient allowlist now.
    [
      'to',
      (v: string) => {
        if (typeof fields.channel !== 'string') return;
        checkRecipient(policy, fields.channel, v);
        // With `last` the allowlist is checked per request and at delivery, where it resolves.
        if (fields.channel !== 'last') checkRecipientAllowed(policy, fields.channel, v);
      },
    ],
  ] as const;
  for (const [field, check] of checks) {
    const value = fields[field];
    if (typeof value !== 'string') continue;
    try {
      check(value);
    } catch (err) {
      if (err instanceof HookError) fail(field, err.message);
      throw err;
    }
  }
}

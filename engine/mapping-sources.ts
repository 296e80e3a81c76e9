/**
 * Where the mappings of a configuration come from, in matching order: the
 * user's `hooks.mappings`, then the mappings of each preset named in
 * `hooks.presets` (unless a user mapping claims the preset's path), each
 * with the config path that errors about it should name.
 */
import { PRESETS, presetProblem } from '../presets/registry.ts';
import type { HooksConfig } from '../schemas/config.ts';
import type { Mapping } from '../schemas/mapping.ts';
import { ConfigError } from './config.ts';

/** A mapping as configured, with where it was configured. */
export type MappingSource = {
  mapping: Mapping;
  /** e.g. `hooks.mappings.0` or `hooks.presets.1`. */
  at: string;
  /** The id when the mapping has none. */
  fallbackId: string;
  /** A preset's settings (e.g. `hooks.github`), blamed for what they set. */
  settingsAt?: string;
};

/** The user's mappings, then the enabled presets' mappings. */
export function mappingSources(hooks: HooksConfig): MappingSource[] {
  const sources: MappingSource[] = hooks.mappings.map((mapping, i) => ({
    mapping,
    at: `hooks.mappings.${i}`,
    fallbackId: `mapping-${i + 1}`,
  }));
  const claimed = new Set(hooks.mappings.map((m) => m.match?.path).filter((p) => p !== undefined));
  hooks.presets.forEach((name, i) => {
    const preset = PRESETS[name];
    if (!preset) {
      throw new ConfigError(
        `hooks.presets.${i}`,
        `unknown preset "${name}" (known: ${Object.keys(PRESETS).join(', ')})`,
      );
    }
    // Every mapping of a preset is on the path named after it: a user mapping for that path
    // overrides the preset entirely (its secret is then not needed either).
    if (claimed.has(name)) return;
    const problem = presetProblem(name, hooks);
    if (problem) throw new ConfigError(problem.at, problem.message);
    for (const mapping of preset(hooks)) {
      sources.push({
        mapping,
        at: `hooks.presets.${i}`,
        fallbackId: name,
        settingsAt: `hooks.${name}`,
      });
    }
  });
  return sources;
}

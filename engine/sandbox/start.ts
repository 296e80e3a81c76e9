/**
 * Starting the transform processes for the mappings that have a transform,
 * at boot: a module that does not load (syntax error, bad import, missing
 * export, top-level throw) is a ConfigError naming the mapping and its module.
 */
import type { Config } from '../../schemas/config.ts';
import { ConfigError } from '../config.ts';
import type { Logger } from '../log.ts';
import type { CompiledMapping } from '../mappings.ts';
import { createPool } from './pool.ts';
import type { TransformSupervisor } from './supervisor.ts';

/** Start and load the transforms; undefined when no mapping has one. */
export async function startTransforms(
  config: Config,
  mappings: readonly CompiledMapping[],
  logger: Logger,
): Promise<TransformSupervisor | undefined> {
  const specs = mappings.flatMap((mapping) => (mapping.transform ? [mapping.transform] : []));
  if (specs.length === 0) return undefined;
  // A call's CPU limit past its deadline could never end it: the deadline would restart the
  // process instead (a deadline set below the CPU limit's default, 250 ms, is allowed).
  const settings = {
    ...config.hooks.transforms,
    cpuTimeoutMs: Math.min(
      config.hooks.transforms.cpuTimeoutMs,
      config.hooks.transforms.deadlineMs,
    ),
  };
  const supervisor = createPool(specs, settings, logger, settings.processes);
  let errors: Map<string, string>;
  try {
    errors = await supervisor.start();
  } catch (err) {
    await supervisor.close();
    throw new ConfigError(
      'hooks.transforms',
      `the transform process did not start: ${(err as Error).message}`,
    );
  }
  const [failed] = errors;
  if (failed) {
    await supervisor.close();
    const [key, message] = failed;
    const mapping = mappings.find((m) => m.transform?.key === key);
    throw new ConfigError(
      `${mapping?.at ?? 'hooks.mappings'}.transform.module`,
      `(mapping "${key}") ${message}`,
    );
  }
  return supervisor;
}

/**
 * The pool of transform processes (hooks.transforms.processes) behind the
 * supervisor interface: one supervisor owns every process, so calls go to
 * whichever process is ready and least busy, and the number of processes
 * alive never exceeds `size`.
 */
import type { Logger } from '../log.ts';
import type { ModuleSpec } from './protocol.ts';
import {
  createSupervisor,
  type SupervisorSettings,
  type TransformSupervisor,
} from './supervisor.ts';

/** Create a supervisor of `size` processes that all load the same modules. */
export function createPool(
  modules: readonly ModuleSpec[],
  settings: SupervisorSettings,
  logger: Logger,
  size: number,
): TransformSupervisor {
  return createSupervisor(modules, settings, logger, { size });
}

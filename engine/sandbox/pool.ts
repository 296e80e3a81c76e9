/**
 * A small pool of transform processes behind the supervisor interface:
 * calls are spread round-robin, so a process killed for a missed deadline
 * takes down only the calls it was running.
 */
import type { Logger } from '../log.ts';
import type { ModuleSpec } from './protocol.ts';
import {
  createSupervisor,
  type SupervisorSettings,
  type TransformSupervisor,
} from './supervisor.ts';

/** Create `size` supervised processes that all load the same modules. */
export function createPool(
  modules: readonly ModuleSpec[],
  settings: SupervisorSettings,
  logger: Logger,
  size: number,
): TransformSupervisor {
  const members = Array.from({ length: Math.max(1, size) }, () =>
    createSupervisor(modules, settings, logger),
  );
  let next = 0;
  return {
    async start() {
      const results = await Promise.all(members.map((member) => member.start()));
      // Every process loads the same modules: the first one's errors say it all.
      return results[0] ?? new Map();
    },
    call(key, input) {
      const member = members[next] as TransformSupervisor;
      next = (next + 1) % members.length;
      return member.call(key, input);
    },
    async close() {
      await Promise.all(members.map((member) => member.close()));
    },
  };
}

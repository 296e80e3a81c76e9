/**
 * What transforms and their processes put in the service log: console
 * lines and process messages, with the mapping id, each within a
 * per-mapping budget per minute counted in the server.
 */
import type { Logger } from '../log.ts';
import { createLogBudget, type LogBudget } from './log-budget.ts';
import type { FromSandbox, ResultMessage } from './protocol.ts';

/** Process log messages per module per minute that reach the log. */
export const LOGS_PER_MODULE_PER_MINUTE = 20;

export type TransformLog = {
  /** console.* lines of one call of module `key`. */
  console(key: string, message: ResultMessage): void;
  /** A message of the process about module `key` (reloads, refusals). */
  process(message: Extract<FromSandbox, { type: 'log' }>): void;
};

/** The log of transforms: `mappingOf` names each module key's mapping. */
export function createTransformLog(
  logger: Logger,
  mappingOf: ReadonlyMap<string, string>,
  consoleLinesPerMinute: number,
): TransformLog {
  const budgetFor = (perMinute: number, what: string): LogBudget =>
    createLogBudget(perMinute, (key, suppressed) =>
      logger.warn({ mappingId: mappingOf.get(key), suppressed }, what),
    );
  const consoleBudget = budgetFor(consoleLinesPerMinute, 'transform console lines suppressed');
  const processBudget = budgetFor(
    LOGS_PER_MODULE_PER_MINUTE,
    'transform process log lines suppressed',
  );
  return {
    console(key, message) {
      const now = Date.now();
      const mappingId = mappingOf.get(key);
      for (const line of message.console) {
        if (consoleBudget.take(key, now))
          logger[line.level]({ mappingId, console: true }, line.text);
      }
      consoleBudget.drop(key, message.droppedLines, now);
    },
    process(message) {
      if (processBudget.take(message.key, Date.now()))
        logger[message.level](
          { mappingId: mappingOf.get(message.key), transform: true },
          message.message,
        );
    },
  };
}

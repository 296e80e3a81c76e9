/**
 * How each transform call settled, published on transformCalled
 * (observe/events.ts) for the metrics: only while someone listens, so an
 * unobserved server pays nothing per call.
 */
import type { HookError } from '../errors.ts';
import { type TransformCalled, transformCalled } from '../observe/events.ts';
import type { TransformResult } from './call-outcome.ts';

/** Publish how a call settled (only called while someone listens). */
export function observed(
  call: Promise<TransformResult>,
  mappingId: string | undefined,
): Promise<TransformResult> {
  const started = performance.now();
  const publish = (outcome: TransformCalled['outcome']) =>
    transformCalled.publish({ mappingId, outcome, durationMs: performance.now() - started });
  return call.then(
    (result) => {
      publish('ok');
      return result;
    },
    (err: HookError) => {
      publish(callOutcome(err.code));
      throw err;
    },
  );
}

/** Publish a call refused at once (busy), when someone listens. */
export function publishBusy(mappingId: string | undefined): void {
  if (transformCalled.hasSubscribers)
    transformCalled.publish({ mappingId, outcome: 'busy', durationMs: 0 });
}

function callOutcome(code: string): TransformCalled['outcome'] {
  if (code === 'transform_timeout') return 'timeout';
  if (code === 'transform_invalid_output') return 'invalid_output';
  return 'failed';
}

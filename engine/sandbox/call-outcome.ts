/**
 * What a checked answer from a transform process means for the caller:
 * the value the transform returned, or the HookError to answer with. The
 * messages never carry the transform's own reason (it may quote payload
 * data or host paths).
 */
import { HookError } from '../errors.ts';
import { nestsDeeperThan } from './frames.ts';
import type { ResultMessage } from './protocol.ts';
import { BackslashKeyError, parseForeignJson } from '../foreign-json.ts';

/**
 * Deepest output nesting accepted (an honest output is an array of flat objects).
 * Checked before JSON.parse: a deeply nested output of maxOutputBytes takes the
 * server's event loop tens of milliseconds to parse, on every call.
 */
export const OUTPUT_DEPTH = 8;

/** What a transform returned: `undefined` when it returned undefined. */
export type TransformResult = { value: unknown };

/** Why a call failed on the server's side, beside the kinds the sandbox reports. */
export type FailureReason = ResultMessage extends { failure?: { kind: infer K } }
  ? K | 'crash' | 'no-process' | 'set-aside'
  : never;

/** The value of an answer, or the error it stands for. */
export function outcomeOf(
  mappingId: string | undefined,
  message: ResultMessage,
): TransformResult | HookError {
  if (message.failure) {
    const { kind } = message.failure;
    const code = kind === 'timeout' ? 'transform_timeout' : 'transform_failed';
    return new TransformFailure(code, failureMessage(mappingId, kind), kind);
  }
  if (message.output === undefined) return { value: undefined };
  if (nestsDeeperThan(message.output, OUTPUT_DEPTH)) {
    return new HookError(
      'transform_invalid_output',
      `Transform of mapping "${mappingId ?? '?'}" returned output nested deeper than ${OUTPUT_DEPTH}.`,
    );
  }
  try {
    return { value: parseForeignJson(message.output) };
  } catch (err) {
    return new HookError(
      'transform_invalid_output',
      err instanceof BackslashKeyError
        ? `Transform of mapping "${mappingId ?? '?'}" returned a key holding a backslash (refused: the JSON parser can misread later keys after one).`
        : `Transform of mapping "${mappingId ?? '?'}" returned invalid JSON.`,
    );
  }
}

// What the transform did with this input: it threw or returned what cannot be sent back. Not a
// timeout (wall time, which a loaded host stretches), nor memory (one isolate's limit, shared
// by every mapping's context in the process: another mapping's state can fill it), nor
// anything of the process or the module (none ready, a crash, a module set aside).
const INPUT_KINDS: ReadonlySet<FailureReason> = new Set(['threw', 'output']);
// What the same input may pass later: out of time (a loaded host) or out of memory (another
// mapping's state, gone once the isolate is rebuilt, as it is after running out).
const CHANCE_KINDS: ReadonlySet<FailureReason> = new Set(['timeout', 'memory']);

/** A failure the transform process reported for a call, with what kind of failure it was. */
export class TransformFailure extends HookError<'transform_failed' | 'transform_timeout'> {
  /** What the sandbox said went wrong; never sent to a caller (the message says it in words). */
  readonly reason: FailureReason;
  constructor(
    code: 'transform_failed' | 'transform_timeout',
    message: string,
    reason: FailureReason,
  ) {
    super(code, message);
    this.reason = reason;
  }
}

/**
 * Whether a transform's failure is its input's: the same input would fail so again (a mail the
 * transform throws on is skipped; a busy host's failure waits). transform_invalid_output always
 * is: the action was built from this input.
 */
export function failedOnInput(err: unknown): boolean {
  if (err instanceof TransformFailure) return INPUT_KINDS.has(err.reason);
  return err instanceof HookError && err.code === 'transform_invalid_output';
}

/**
 * Whether a transform's failure may not happen again with the same input (out of time or of
 * memory): worth a few more tries before the input is given up on.
 */
export function mayPassLater(err: unknown): err is HookError {
  if (err instanceof TransformFailure) return CHANCE_KINDS.has(err.reason);
  // The server's own deadline (the process killed for it) is a timeout too.
  return err instanceof HookError && err.code === 'transform_timeout';
}

/** The caller-facing message for a failed call. */
export function failureMessage(mappingId: string | undefined, kind: FailureReason): string {
  const who = `Transform of mapping "${mappingId ?? '?'}"`;
  if (kind === 'timeout') return `${who} did not finish in time.`;
  if (kind === 'memory') return `${who} ran out of memory.`;
  if (kind === 'crash') return `${who} failed: the transform process stopped.`;
  if (kind === 'output') return `${who} returned an output that is too large.`;
  if (kind === 'no-process') return `${who} failed: no transform process is available.`;
  if (kind === 'unavailable') return `${who} failed: the module is not loaded.`;
  if (kind === 'set-aside')
    return `${who} failed: its module stopped the transform process while loading, twice, and is set aside until the configuration is reloaded.`;
  return `${who} failed.`;
}

/**
 * What every agent runner takes and gives back. A runner says whether the
 * work happened: `retry` only when it did not (unreachable, 429, 5xx), so
 * the worker never runs a turn twice that already ran.
 */
import type { Action } from '../../../schemas/action.ts';
import { tailUnits } from '../../text-cut.ts';

/** One agent turn (or heartbeat) to run; this JSON is what command and http runners receive. */
export type RunRequest = {
  kind: 'agent' | 'heartbeat';
  runId: string;
  agentId: string;
  sessionKey: string;
  message: string;
  /** null when neither the request nor the agent names one (the runner's default applies). */
  model: string | null;
  thinking: string | null;
  timeoutSeconds: number;
  history: Array<{ role: 'user' | 'assistant'; text: string }>;
  /**
   * Where an agent turn's request came from (absent for the heartbeat): the hook, the mapping,
   * whether its content is wrapped as untrusted, and how the request was authenticated, so an
   * agent can tell a verified provider event from a caller that only holds the hook token.
   */
  origin?: {
    hook: string;
    mappingId?: string;
    untrusted: boolean;
    verification?: NonNullable<Action['verification']>;
  };
};

export type RunResult =
  | { status: 'ok'; reply: string }
  | { status: 'error'; reason: string }
  | { status: 'timeout'; reason: string }
  | { status: 'retry'; reason: string; retryAfterMs?: number };

/** Hooks a runner reports to while it runs. */
export type RunHooks = {
  /** A process group was started for this run (recorded so a restart can end it). */
  onSpawn?: (pgid: number) => void;
  /** Aborted on shutdown: the run did not finish and is retried later. */
  signal?: AbortSignal;
};

export type Runner = { run(request: RunRequest, hooks?: RunHooks): Promise<RunResult> };

/** Default of `runtime.maxReplyBytes`: the most bytes of a runner's answer that are read. */
export const DEFAULT_MAX_REPLY_BYTES = 1_048_576;

/**
 * A runner's answer past the cap: final, never retried. The turn ran (the
 * runner answered), so running it again would redo the work and likely the
 * same flood.
 */
export function replyTooLarge(maxBytes: number): RunResult {
  return {
    status: 'error',
    reason: `the runner's answer exceeded ${maxBytes} bytes (runtime.maxReplyBytes)`,
  };
}

/** The last `max` characters of a text, for error reasons. */
export function tail(text: string, max = 500): string {
  const trimmed = text.trim();
  return trimmed.length > max ? `…${tailUnits(trimmed, max)}` : trimmed;
}

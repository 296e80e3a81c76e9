/**
 * What the admin listener needs from a running hookgate, passed in by the
 * wiring: readiness, metrics, the request journal, the runtime's runs and a
 * dry run through the current config. The admin modules import nothing of
 * the instance itself, so a reload only swaps what these functions read.
 */
import type { DeliveryProgress, Outcome } from '../runtime/runtime-store.ts';
import type { ActionState } from '../queue/action-store.ts';
import type { DryRunRequest, DryRunResult } from '../ingress/dry-run.ts';
import type { RequestJournal } from './journal.ts';

/** Readiness as `GET /readyz` answers it (503 unless ready). */
export type Readiness = {
  ready: boolean;
  checks: Record<string, { ok: boolean; detail?: string }>;
};

/** One action's run as the console shows it. */
export type RunView = {
  id: string;
  state: ActionState;
  attempts: number;
  startedAt: string | null;
  finishedAt: string | null;
  /** The outcome's status (`retrying`, `delivering`, ...), absent before the first attempt ends. */
  status?: Outcome['status'];
  reply?: string;
  reason?: string;
  delivery?: DeliveryProgress;
};

/** Retry of a dead or failed run: queued again, or why not (no such run, or not dead or failed). */
export type RetryResult =
  | { ok: true }
  | { ok: false; refusal: 'not_found' | 'not_retryable'; reason: string };

export type RunsAccess = {
  get(actionId: string): Promise<RunView | undefined>;
  /** The states of these actions' runs (those that exist). */
  states(actionIds: readonly string[]): Promise<ReadonlyMap<string, string>>;
  retry(actionId: string): Promise<RetryResult>;
};

/** Headers that sign a body as the route's sender would, or the sentence saying why not. */
export type SignFor = (
  hook: string,
  body: Buffer,
  headers: Record<string, string>,
) => Record<string, string> | string;

export type AdminDeps = {
  readiness(): Promise<Readiness>;
  metrics?: { contentType: string; render(): Promise<string> };
  journal: RequestJournal;
  /** Undefined when the runtime is off. */
  runs: RunsAccess | undefined;
  /** Through the current config and routes; stores nothing. */
  dryRun(request: DryRunRequest): Promise<DryRunResult>;
  signFor?: SignFor;
};

/**
 * What each benchmark target's server is: the spec its child process starts
 * from (store, runtime, agent, mappings, transforms, log) and the one-line
 * description the report prints for it.
 */
import path from 'node:path';
import type { BenchOptions } from './options.ts';
import type { ServerSpec, Target } from './targets.ts';

/** The info log of the log-to-file target, inside its data dir. */
export const LOG_FILE = 'requests.log';

/** The options with what the run started for them: the agent, a profile directory. */
export type RunOptions = BenchOptions & { agentUrl?: string; profileTemp?: string };

/** A target's setup, as one line of the report. */
export function describeTarget(target: Target, options: BenchOptions): string {
  const variant = target.hookgate;
  if (target.reference) {
    return (
      'raw node:http: read body, JSON.parse, the body appended as one row (integer key, text) ' +
      "to node:sqlite (WAL, synchronous=FULL), a turn's rows in one transaction committed in " +
      "the check phase, 200 after the COMMIT: what durability alone costs, hookgate's ceiling"
    );
  }
  if (!variant) return 'raw node:http: read body, JSON.parse, 200 {"ok":true}';
  const parts: string[] = [];
  if (variant.transformFiles) {
    parts.push(
      'a mapping calling a transform in the sandbox (isolated-vm in a separate transform process, ' +
        'warm context; default limits, isolate recycled every 10,000 calls)',
    );
  } else if (target.githubSecret !== undefined) {
    parts.push(
      'the github preset: X-Hub-Signature-256 verified over the raw body, delivery id and ' +
        'signed-content keys, mapping chosen by X-GitHub-Event; a fresh body and id per request',
    );
  } else if (variant.hooks) {
    parts.push('a mapping with a JSON-logic condition on a header and Handlebars templates');
  }
  if (variant.postgres) {
    parts.push(
      "PostgreSQL store (the bench's own server, fsync and synchronous_commit on, a fresh " +
        'database; pool 10 per instance; the accepts of one event-loop turn in one statement)',
    );
  }
  if (variant.postgres && variant.postgres.instances > 1) {
    parts.push(
      `${variant.postgres.instances} instances on that one database, autocannon's connections ` +
        'dealt round-robin over their URLs (no balancer in the path); server CPU is their sum',
    );
  }
  parts.push(
    variant.memoryStore
      ? 'in-memory store: nothing is committed'
      : variant.postgres
        ? `commitDelayMs ${variant.commitDelayMs} (not used by the PostgreSQL store)`
        : `commitDelayMs ${variant.commitDelayMs}`,
    variant.logToFile ? `log info -> ${LOG_FILE} in the data dir` : 'log silent',
    runtimeOn(target, options)
      ? "runtime on (the worker runs the actions; agent turns through an http runner to the bench's agent, which answers at once)"
      : 'runtime off (ingress only)',
  );
  if (variant.maxFailures !== undefined) {
    parts.push(`authRateLimit.maxFailures ${variant.maxFailures} (so 401, never 429)`);
  }
  return parts.join(', ');
}

/** Whether the target runs the runtime (action worker, heartbeat), as `hookgate serve` does. */
export function runtimeOn(target: Target, options: BenchOptions): boolean {
  return target.hookgate?.runtime ?? options.runtime;
}

/** What the server child process starts for a target. */
export function serverSpec(
  target: Target,
  options: RunOptions,
  dataDir: string | undefined,
  postgresUrl: string | undefined,
): ServerSpec {
  if (target.reference && dataDir) return { kind: 'durable-reference', dataDir };
  const variant = target.hookgate;
  if (!variant || !dataDir) return { kind: 'baseline' };
  const runtime = runtimeOn(target, options);
  return {
    kind: 'hookgate',
    dataDir,
    commitDelayMs: variant.commitDelayMs,
    runtime,
    ...(runtime && options.agentUrl !== undefined && { agentUrl: options.agentUrl }),
    ...(variant.logToFile && { logFile: path.join(dataDir, LOG_FILE) }),
    ...(variant.maxFailures !== undefined && { maxFailures: variant.maxFailures }),
    ...(variant.memoryStore && { memoryStore: true }),
    ...(variant.hooks && { hooks: variant.hooks }),
    ...(variant.transformFiles && { transformFiles: variant.transformFiles }),
    ...(postgresUrl !== undefined && { postgresUrl }),
  };
}

/**
 * Child-process entry of the benchmark: starts one server on 127.0.0.1
 * (the raw node:http baseline, the durable reference or hookgate, described by a JSON ServerSpec in
 * argv[2]), reports its URL over IPC, and answers sample requests (CPU
 * time, its own and its child processes', store commits) until the parent
 * kills it. The baseline process loads no hookgate code.
 */
import type { CommitStats } from './commit-probe.ts';
import { descendantCpuMicros } from './descendant-cpu.ts';
import type { ServerSpec } from './targets.ts';

/** Counters of the server process at one moment. */
export type ServerSample = {
  userMicros: number;
  systemMicros: number;
  /** CPU time of the live processes this one started (the transform process). */
  childMicros: number;
  /** Acceptance COMMITs (an fsync each) and the time inside them. */
  commits: number;
  commitMicros: number;
  /** The runtime's COMMITs (no fsync) and the time inside them. */
  lifecycleCommits: number;
  lifecycleCommitMicros: number;
  /** V8's live heap and memory outside it (Buffers, SQLite and other native allocations), bytes. */
  heapUsed: number;
  external: number;
};

/** Messages from the child to the parent. */
export type ChildMessage =
  | { type: 'ready'; url: string }
  | { type: 'sample'; sample: ServerSample };

function sample(commits: CommitStats): ServerSample {
  const cpu = process.cpuUsage();
  return {
    userMicros: cpu.user,
    systemMicros: cpu.system,
    childMicros: descendantCpuMicros(),
    commits: commits.commits,
    commitMicros: commits.micros,
    lifecycleCommits: commits.lifecycleCommits,
    lifecycleCommitMicros: commits.lifecycleMicros,
    heapUsed: process.memoryUsage().heapUsed,
    external: process.memoryUsage().external,
  };
}

async function start(spec: ServerSpec): Promise<{ url: string; commits: CommitStats }> {
  if (spec.kind === 'baseline') {
    const { startBaseline } = await import('./baseline-server.ts');
    return {
      url: await startBaseline(),
      commits: { commits: 0, micros: 0, lifecycleCommits: 0, lifecycleMicros: 0 },
    };
  }
  if (spec.kind === 'durable-reference') {
    const { startDurableReference } = await import('./durable-reference-server.ts');
    return {
      url: await startDurableReference(spec.dataDir),
      commits: { commits: 0, micros: 0, lifecycleCommits: 0, lifecycleMicros: 0 },
    };
  }
  // The probe must wrap DatabaseSync before the store opens its connection.
  const commits = (await import('./commit-probe.ts')).installCommitProbe();
  const { startHookgateServer } = await import('./hookgate-server.ts');
  return { url: await startHookgateServer(spec), commits };
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as ServerSpec;
  const { url, commits } = await start(spec);
  const send = (message: ChildMessage) => process.send?.(message);
  process.on('message', (message: string) => {
    // 'exit' (profiling runs only): a normal exit, so --cpu-prof writes the profile.
    if (message === 'exit') process.exit(0);
    send({ type: 'sample', sample: sample(commits) });
  });
  // An orphaned server must not outlive the benchmark.
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready', url });
}

main().catch((err: unknown) => {
  process.stderr.write(`bench server: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});

/**
 * The kill test's cluster: several real `hookgate serve` processes sharing
 * one PostgreSQL database, each running agent turns through a small bash
 * runner that records every execution's start and end (with its pid and
 * times) into one file and takes 5-30 ms (after a hold, when asked); plus reading back what the store
 * holds and what the runner recorded, in the checker's terms.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { RunnerRecord, StoredAction } from './kill-check.ts';
import { LISTENING, type RunningServer, spawnHookgate } from './process.ts';

// bash, not node: a run costs a few forks instead of a Node start, so the runs keep up with the
// producers on a small machine. Times are EPOCHREALTIME (microseconds, no fork).
const RUNNER = `#!/bin/bash
IFS= read -r line
[[ $line =~ \\"sessionKey\\":\\"([^\\"]*)\\" ]] && session=\${BASH_REMATCH[1]}
note() { printf '{"runId":"%s","session":"%s","pid":%d,"phase":"%s","at":%s}\\n' \\
  "$HOOKGATE_RUN_ID" "$session" $$ "$1" "\${EPOCHREALTIME/./}" >> "$KILL_RECORD"; }
note start
if [[ -n $RUN_HOLD ]]; then while [[ ! -e $RUN_HOLD ]]; do sleep 0.2; done; fi
printf -v pause '0.%03d' $((RANDOM % 26 + 5))
sleep "$pause"
note end
echo ok
`;

export type Cluster = {
  instances: RunningServer[];
  /** The file every runner appends its records to. */
  recordFile: string;
};

/** Start `count` instances on one database; `env` goes to every instance (e.g. test faults). */
export async function startCluster(options: {
  dir: string;
  url: string;
  token: string;
  count: number;
  leaseSeconds: number;
  concurrency: number;
  env?: Record<string, string>;
  /** When given, every run waits until this file exists (then takes its 5-30 ms). */
  holdRunsUntil?: string;
}): Promise<Cluster> {
  const recordFile = path.join(options.dir, 'runs.jsonl');
  const runner = path.join(options.dir, 'runner.sh');
  writeFileSync(runner, RUNNER);
  chmodSync(runner, 0o755);
  const starting = Array.from({ length: options.count }, async (_, index) => {
    const dataDir = path.join(options.dir, `instance-${index}`);
    mkdirSync(dataDir, { recursive: true });
    const config = path.join(dataDir, 'hookgate.json');
    writeFileSync(
      config,
      JSON.stringify({
        server: { host: '127.0.0.1', port: 0 },
        hooks: {
          enabled: true,
          token: options.token,
          allowRequestSessionKey: true,
          allowedSessionKeyPrefixes: ['hook:'],
        },
        store: { kind: 'postgres', url: options.url, leaseSeconds: options.leaseSeconds },
        runtime: {
          dataDir,
          concurrency: options.concurrency,
          heartbeat: { every: 'off' },
        },
        agents: {
          defaults: {
            runner: {
              kind: 'command',
              argv: ['/bin/bash', runner],
              env: { KILL_RECORD: recordFile, RUN_HOLD: options.holdRunsUntil ?? '' },
            },
          },
        },
      }),
    );
    const proc = spawnHookgate(['serve', '--config', config, '--port', '0'], {
      env: options.env ?? {},
    });
    const match = await proc.waitForStdout(LISTENING, 60_000);
    return { ...proc, url: match[1] as string, port: Number(match[2]) };
  });
  return { instances: await Promise.all(starting), recordFile };
}

/** Every execution record the runners wrote (times in ms). */
export function readRunnerRecords(file: string): RunnerRecord[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const record = JSON.parse(line) as RunnerRecord;
      return { ...record, at: record.at / 1000 };
    });
}

/** The agent actions stored, with the session and k their text (`s<session>:<k>`) names. */
export async function readStoredActions(
  client: pg.Client,
): Promise<Array<StoredAction & { state: string }>> {
  const { rows } = await client.query<{ id: string; seq: string; state: string; message: string }>(
    `SELECT id, seq, state, action::json->>'message' AS message FROM actions WHERE kind = 'agent'`,
  );
  return rows.map((row) => {
    const match = /^s(\d+):(\d+)$/.exec(row.message);
    if (!match) throw new Error(`an action the producers did not send: ${row.message}`);
    return {
      id: row.id,
      seq: Number(row.seq),
      session: `hook:s${match[1]}`,
      k: Number(match[2]),
      state: row.state,
    };
  });
}

/** Actions not finished yet (queued or running). */
export async function unfinished(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM actions WHERE state IN ('queued', 'running')",
  );
  return rows[0]?.n ?? 0;
}

/** A client of its own for the test, reconnecting is the caller's business. */
export async function connectTo(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

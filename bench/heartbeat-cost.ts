/**
 * What the heartbeat costs per event it carries, apart from acceptance:
 * `npx node bench/heartbeat-cost.ts [EVENTS] [--cpu-prof FILE]`. hookgate
 * runs in this process with the runtime on (the bench's agent, which acks
 * at once, in a child process of its own, so its CPU is not counted); EVENTS
 * wakes (default 20,000, the bench's /wake body) are accepted with mode
 * `next-heartbeat`, so no heartbeat runs while they are stored; then one wake
 * asks for a heartbeat now, and the heartbeats that follow carry the whole
 * backlog. Printed: this process's CPU from that wake until no event is
 * pending, per event and per heartbeat. With --cpu-prof, that window's V8
 * profile is written to FILE (summarise it with bench/profile-summary.ts).
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { STORE_FILE } from '../engine/store/sqlite/action-store.ts';
import { backlogOf } from './backlog.ts';
import { startHookgateServer } from './hookgate-server.ts';
import { TOKEN, WAKE_BODY } from './targets.ts';

const DRAIN_LIMIT_MS = 120_000;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'cpu-prof': { type: 'string' }, agent: { type: 'boolean' } },
});

if (values.agent) {
  // The child: the bench's agent, its URL sent to the parent.
  const { startBenchAgent } = await import('./agent-server.ts');
  const agent = await startBenchAgent();
  process.send?.(agent.url);
} else {
  await main(Number(positionals[0] ?? 20_000));
}

async function main(events: number): Promise<void> {
  const child = fork(import.meta.filename, ['--agent'], { stdio: 'inherit' });
  const agentUrl = await new Promise<string>((resolve) => child.once('message', resolve));
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hookgate-heartbeat-cost-'));
  try {
    const url = await startHookgateServer({
      kind: 'hookgate',
      dataDir,
      commitDelayMs: 0,
      runtime: true,
      agentUrl,
    });
    const later = JSON.stringify({ ...JSON.parse(WAKE_BODY), mode: 'next-heartbeat' });
    const filled = await autocannon({
      url: `${url}/hooks/wake`,
      method: 'POST',
      connections: 32,
      amount: events,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: later,
    });
    if (filled['2xx'] !== events) throw new Error(`only ${filled['2xx']} of ${events} accepted`);
    const pending = backlogOf(dataDir).events;
    const session = new Session();
    if (values['cpu-prof']) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 100 });
      await session.post('Profiler.start');
    }
    const heartbeatsBefore = heartbeatCount(dataDir);
    const cpu = process.cpuUsage();
    const started = performance.now();
    const asked = await fetch(`${url}/hooks/wake`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: WAKE_BODY,
    });
    if (!asked.ok) throw new Error(`the wake asking now got ${asked.status}`);
    // A condition of the store that the heartbeats change: polled, as the bench's drain does,
    // and given up after DRAIN_LIMIT_MS (a failing agent or heartbeat never drains it).
    let left = backlogOf(dataDir).events;
    while (left > 0 && performance.now() - started < DRAIN_LIMIT_MS) {
      await new Promise((r) => setTimeout(r, 100));
      left = backlogOf(dataDir).events;
    }
    if (left > 0)
      throw new Error(`not drained: ${left} events still pending after ${DRAIN_LIMIT_MS / 1000} s`);
    const used = process.cpuUsage(cpu);
    const seconds = (performance.now() - started) / 1000;
    if (values['cpu-prof']) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(values['cpu-prof'], JSON.stringify(profile));
    }
    const heartbeats = heartbeatCount(dataDir) - heartbeatsBefore;
    const micros = used.user + used.system;
    const carried = pending + 1;
    console.log(
      `${carried} events in ${heartbeats} heartbeats (${(carried / heartbeats).toFixed(1)} each), ${seconds.toFixed(2)} s: ` +
        `${(micros / carried).toFixed(1)} µs CPU per event (${(used.system / carried).toFixed(1)} kernel), ` +
        `${(micros / heartbeats / 1000).toFixed(2)} ms per heartbeat`,
    );
  } catch (err) {
    console.error(`heartbeat-cost: ${(err as Error).message}`);
    process.exitCode = 1;
  } finally {
    child.kill();
    rmSync(dataDir, { recursive: true, force: true });
    // The server and its timers are not closed one by one: this process ends here.
    process.exit();
  }
}

function heartbeatCount(dataDir: string): number {
  const db = new DatabaseSync(path.join(dataDir, STORE_FILE), { readOnly: true, timeout: 5_000 });
  try {
    return Number((db.prepare('SELECT count(*) AS n FROM heartbeats').get() as { n: number }).n);
  } finally {
    db.close();
  }
}

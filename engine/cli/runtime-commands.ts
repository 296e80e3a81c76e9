/**
 * Operator commands over the runtime's records, safe while the server runs
 * (they use their own connection; WAL readers never block the writer):
 * `runs`, `events`, `heartbeat now`, `retry <action id>`.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { ActionState } from '../queue/action-store.ts';
import { findConfigFile, loadConfigFile } from '../config.ts';
import { STORE_FILE } from '../queue/sqlite-schema.ts';
import { RuntimeStore } from '../runtime/runtime-store.ts';
import { wrappedContent } from '../safety.ts';
import { dataDirForList, type ListFlags } from './list-actions.ts';

const STATES: readonly ActionState[] = ['queued', 'running', 'done', 'failed', 'dead'];

function openStore(flags: ListFlags): RuntimeStore | string {
  const dataDir = dataDirForList(flags, process.env, process.cwd());
  if (!existsSync(path.join(dataDir, STORE_FILE))) return `No store in ${dataDir} yet.`;
  return RuntimeStore.open(dataDir);
}

/** The main session key: session.mainKey of the config when one is found, else "main". */
function mainKeyFor(flags: ListFlags): string {
  const file = findConfigFile(flags.config, process.env, process.cwd());
  return file ? loadConfigFile(file, process.env).config.session.mainKey : 'main';
}

function oneLine(text: string, max = 100): string {
  const flat = wrappedContent(text).replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** `runs [--json] [--state S] [--limit N]`: actions with their lifecycle, newest first. */
export function runs(flags: ListFlags & { state?: string }, out: (line: string) => void): number {
  if (flags.state !== undefined && !STATES.includes(flags.state as ActionState)) {
    process.stderr.write(`hookgate runs: --state must be one of ${STATES.join(', ')}\n`);
    return 2;
  }
  const store = openStore(flags);
  if (typeof store === 'string') {
    if (!flags.json) out(store);
    return 0;
  }
  try {
    const rows = store.runs(Number(flags.limit ?? 20), flags.state as ActionState | undefined);
    for (const row of rows) {
      if (flags.json) {
        out(JSON.stringify(row));
        continue;
      }
      const what =
        row.action.kind === 'agent'
          ? `agent=${row.action.agentId} session=${row.action.sessionKey}`
          : 'wake';
      const result = row.outcome?.reason ?? row.outcome?.reply ?? '';
      out(
        `${row.action.receivedAt}  ${row.id}  ${row.state.padEnd(7)}  attempts=${row.attempts}  ${what}  ${oneLine(result)}`,
      );
    }
    if (rows.length === 0 && !flags.json) out('No runs.');
  } finally {
    store.close();
  }
  return 0;
}

/** `events [--session KEY] [--json] [--limit N]`: system events of a session, newest first. */
export function events(
  flags: ListFlags & { session?: string },
  out: (line: string) => void,
): number {
  const store = openStore(flags);
  if (typeof store === 'string') {
    if (!flags.json) out(store);
    return 0;
  }
  try {
    const rows = store.events(flags.session ?? mainKeyFor(flags), Number(flags.limit ?? 20));
    for (const event of rows) {
      if (flags.json) out(JSON.stringify(event));
      else {
        const state = event.consumedBy ? 'consumed' : 'pending';
        out(
          `${event.createdAt}  ${event.source.padEnd(12)}  ${state.padEnd(8)}  ${event.trusted ? 'trusted  ' : 'untrusted'}  ${oneLine(event.text)}`,
        );
      }
    }
    if (rows.length === 0 && !flags.json) out('No events.');
  } finally {
    store.close();
  }
  return 0;
}

/** `heartbeat now`: ask the running server for an immediate heartbeat. */
export function heartbeatNow(flags: ListFlags, out: (line: string) => void): number {
  const store = openStore(flags);
  if (typeof store === 'string') {
    process.stderr.write(`hookgate heartbeat: ${store}\n`);
    return 1;
  }
  try {
    store.request('heartbeat');
  } finally {
    store.close();
  }
  out('Heartbeat requested; the running server starts it within a second.');
  return 0;
}

/** `retry <action id>`: a dead action back to the queue with fresh attempts. */
export function retry(flags: ListFlags & { id: string }, out: (line: string) => void): number {
  const store = openStore(flags);
  if (typeof store === 'string') {
    process.stderr.write(`hookgate retry: ${store}\n`);
    return 1;
  }
  try {
    const run = store.run(flags.id);
    if (!run) {
      process.stderr.write(`hookgate retry: no action ${flags.id}\n`);
      return 1;
    }
    if (!store.retryDead(flags.id)) {
      process.stderr.write(`hookgate retry: action ${flags.id} is ${run.state}, not dead\n`);
      return 1;
    }
  } finally {
    store.close();
  }
  out(`Action ${flags.id} is queued again.`);
  return 0;
}

/**
 * Helpers for the runtime's end-to-end tests: the recording test agent
 * (test/fixtures/agent.mjs) as a command runner, bounded polling, reading
 * the store with node:sqlite, and whether a process is still running.
 */
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import { expect } from 'vitest';
import { unwrap } from './wrapped.ts';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const NODE = path.join(ROOT, 'node_modules/.bin/node');
/** NODE with its link resolved: the node binary itself. */
export const NODE_BINARY = realpathSync(NODE);
export const AGENT = path.join(ROOT, 'test/fixtures/agent.mjs');

/** A `command` runner setting that runs the test agent, recording its stdin into `record`. */
export function agentRunner(record: string): {
  kind: 'command';
  argv: string[];
  env: Record<string, string>;
} {
  return { kind: 'command', argv: [NODE, AGENT], env: { AGENT_RECORD: record } };
}

/** One line the test agent wrote: its stdin JSON plus pid, times and phase. */
export type AgentRecord = {
  kind: 'agent' | 'heartbeat';
  runId: string;
  agentId: string;
  sessionKey: string;
  message: string;
  model?: string;
  thinking?: string;
  timeoutSeconds: number;
  history: Array<{ role: 'user' | 'assistant'; text: string }>;
  pid: number;
  started: number;
  phase: 'start' | 'spawned' | 'end';
  childPid?: number;
  ended?: number;
};

/** Every record the test agent wrote, in order (none when the file does not exist yet). */
export function readRecords(file: string): AgentRecord[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as AgentRecord);
}

/** The runner's stdin as the agent received it (the record without what the agent added). */
export function runnerInput(record: AgentRecord): Record<string, unknown> {
  const { pid: _pid, started: _started, phase: _phase, childPid: _c, ended: _e, ...input } = record;
  return input;
}

/** Poll until `probe` returns a value other than undefined/null/false; fail after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs = 20_000,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== null && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const cause = lastError ? ` (last error: ${(lastError as Error).message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${cause}`);
    }
    await sleep(intervalMs);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export type Row = Record<string, SQLInputValue>;

/** Rows of a query on the store of a data directory, over a read-only connection of its own. */
export function query(dataDir: string, sql: string, ...params: SQLInputValue[]): Row[] {
  const db = new DatabaseSync(path.join(dataDir, 'hookgate.db'), {
    readOnly: true,
    timeout: 10_000,
  });
  try {
    return db.prepare(sql).all(...params) as Row[];
  } finally {
    db.close();
  }
}

/** The lifecycle of one action as the runtime stored it. */
export type ActionRow = {
  id: string;
  state: string;
  attempts: number;
  outcome: { status: string; reply?: string; reason?: string; ack?: boolean } | null;
};

/** One action's state, attempts and outcome (undefined when it is not stored). */
export function actionRow(dataDir: string, id: string): ActionRow | undefined {
  const [row] = query(dataDir, 'SELECT id, state, attempts, outcome FROM actions WHERE id = ?', id);
  if (!row) return undefined;
  return {
    id: String(row['id']),
    state: String(row['state']),
    attempts: Number(row['attempts']),
    outcome: row['outcome'] ? (JSON.parse(String(row['outcome'])) as ActionRow['outcome']) : null,
  };
}

/** Wait until an action reaches one of the final states and return it. */
export function waitForFinal(
  dataDir: string,
  id: string,
  timeoutMs = 20_000,
  states: readonly string[] = ['done', 'failed', 'dead'],
): Promise<ActionRow> {
  return waitFor(
    `action ${id} to reach ${states.join('/')}`,
    () => {
      const row = actionRow(dataDir, id);
      return row && states.includes(row.state) ? row : undefined;
    },
    timeoutMs,
  );
}

/** True while a process exists and is not a zombie (killed children may wait to be reaped). */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    if (existsSync('/proc/self/stat')) return false;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The name, parent and process group of a live process (from /proc), or undefined. */
export function processStat(pid: number): { comm: string; ppid: number; pgid: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const end = text.lastIndexOf(')');
    const [state, ppid, pgid] = text.slice(end + 2).split(' ');
    if (state === 'Z' || state === 'X') return undefined;
    return { comm: text.slice(text.indexOf('(') + 1, end), ppid: Number(ppid), pgid: Number(pgid) };
  } catch {
    return undefined;
  }
}

/** Pids of all processes (from /proc). */
export function processes(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

/** Live pids in process group `pgid`. */
export function groupMembers(pgid: number): number[] {
  return processes().filter((pid) => processStat(pid)?.pgid === pgid);
}

/**
 * SIGKILL the watchdog of a command runner's process group (the `sh` that
 * ends the group when hookgate dies), to see what happens without it.
 */
export function killWatchdog(pgid: number): void {
  const [watchdog] = groupMembers(pgid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('hookgate-runner');
    } catch {
      return false;
    }
  });
  expect(watchdog, `the watchdog of process group ${pgid}`).toBeDefined();
  process.kill(watchdog as number, 'SIGKILL');
}

/** SIGKILL the process groups of test agents still running (each agent leads its own group). */
export function killAgentGroups(records: readonly AgentRecord[]): void {
  for (const pid of new Set(records.map((record) => record.pid))) {
    if (!isRunning(pid)) continue;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/** One request a stub endpoint received. */
export type Exchange = {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
  at: number;
  /** The client went away before the answer was sent (a cancelled call). */
  aborted: boolean;
};

/** How a stub answers one request. */
export type StubReply = {
  status?: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON, a string as is. */
  body?: unknown;
  delayMs?: number;
  /** Close the connection without an answer, the whole request read (a crash mid-turn). */
  drop?: boolean;
};

export type Stub = { url: string; exchanges: Exchange[]; close(): Promise<void> };

/** A local HTTP endpoint on 127.0.0.1 that answers the nth request (from 0) as `respond` says. */
export async function startStub(
  respond: (index: number, exchange: Exchange) => StubReply,
): Promise<Stub> {
  const exchanges: Exchange[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      raw += chunk;
    });
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        body = { raw };
      }
      const exchange: Exchange = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
        at: Date.now(),
        aborted: false,
      };
      const index = exchanges.push(exchange) - 1;
      res.on('close', () => {
        if (!res.writableFinished) exchange.aborted = true;
      });
      const reply = respond(index, exchange);
      const send = () => {
        if (res.destroyed) return;
        if (reply.drop) {
          res.socket?.destroy();
          return;
        }
        const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {});
        res.writeHead(reply.status ?? 200, {
          'content-type': typeof reply.body === 'string' ? 'text/plain' : 'application/json',
          ...reply.headers,
        });
        res.end(text);
      };
      if (reply.delayMs) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          send();
        }, reply.delayMs);
        timers.add(timer);
      } else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    close() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** An OpenAI chat-completions answer with one assistant message. */
export function chatCompletion(content: string): Record<string, unknown> {
  return {
    id: 'chatcmpl-test',
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  };
}

/**
 * A summary event's text: the trusted status line, then the summary line
 * wrapped as untrusted content (asserted); returns the summary line.
 */
export function summaryContent(text: string): string {
  const match = /^Hook summary \((ok|error|timeout)\):\n/.exec(text);
  expect(match, `not a summary: ${text.slice(0, 80)}`).not.toBeNull();
  const { label, content } = unwrap(text.slice((match as RegExpExecArray)[0].length));
  expect(label).toBe('Hook run summary');
  return content;
}

/** The summaries an action posted into the main session (their wrapped lines), oldest first. */
export function summaries(dataDir: string, actionId: string): string[] {
  return query(
    dataDir,
    "SELECT text FROM system_events WHERE action_id = ? AND source = 'hook-summary' ORDER BY seq",
    actionId,
  ).map((row) => summaryContent(String(row['text'])));
}

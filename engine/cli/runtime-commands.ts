/**
 * Operator views over the runtime's records, safe while the server runs
 * (they use their own connection; WAL readers never block the writer):
 * `runs`, `events`, `heartbeats`. Text lines go through terminalText and
 * JSON lines through jsonLine: request text cannot drive the terminal.
 */
import { ACTION_STATES as STATES, type ActionState } from '../queue/action-store.ts';
import type { HeartbeatRow, RunRow, RuntimeStore } from '../runtime/runtime-store.ts';
import { openStoreViews } from '../store/backend.ts';
import { wrappedContent } from '../safety.ts';
import { clipLine } from '../one-line.ts';
import { type ListFlags, listLimit } from './list-actions.ts';
import { type StoreLocation, storeLocation } from './store-location.ts';
import { jsonLine, terminalText } from './terminal-text.ts';

type Out = (line: string) => void;

/** The store and where it is, or the sentence saying there is none yet. */
export async function openStore(flags: ListFlags): Promise<
  | {
      store: RuntimeStore;
      at: StoreLocation;
      /** The data directory, or the database (no password). */
      where: string;
      close(): Promise<void>;
    }
  | string
> {
  const at = storeLocation(flags, process.env, process.cwd());
  const views = await openStoreViews(at.dataDir, at.store);
  if (typeof views === 'string') return views;
  return { store: views.runtime, at, where: views.describe, close: () => views.close() };
}

/** Run `view` over the store; prints "No store ..." (text mode) when there is none. */
async function withStore(
  flags: ListFlags,
  out: Out,
  view: (store: RuntimeStore, at: StoreLocation, say: Out) => Promise<void>,
): Promise<number> {
  const say = (line: string) => out(terminalText(line));
  const opened = await openStore(flags);
  if (typeof opened === 'string') {
    if (!flags.json) say(opened);
    return 0;
  }
  try {
    await view(opened.store, opened.at, say);
  } finally {
    await opened.close();
  }
  return 0;
}

function oneLine(text: string, max = 100): string {
  return clipLine(wrappedContent(text), max);
}

/** What a run's text line says about its result: the reason for failed and dead runs. Pure. */
export function runResult(row: RunRow): string {
  const outcome = row.outcome;
  if (!outcome) return '';
  const delivery = outcome.delivery;
  const deliveryReason =
    delivery && delivery.state !== 'sent' && delivery.reason
      ? `delivery ${delivery.state}: ${delivery.reason}`
      : undefined;
  const reason = outcome.reason ?? deliveryReason;
  if (row.state === 'dead' || row.state === 'failed' || outcome.status === 'retrying') {
    return reason ? `reason: ${oneLine(reason, 200)}` : '';
  }
  // Done, and its reply went nowhere (no recipient, say): said beside the reply.
  const skipped =
    delivery?.state === 'skipped' && delivery.reason && outcome.reply !== undefined
      ? `  [delivery skipped: ${oneLine(delivery.reason, 200)}]`
      : '';
  return oneLine(outcome.reply ?? reason ?? '') + skipped;
}

/** `runs [--json] [--state S] [--limit N]`: actions with their lifecycle, newest first. */
export async function runs(flags: ListFlags & { state?: string }, out: Out): Promise<number> {
  if (flags.state !== undefined && !STATES.includes(flags.state as ActionState)) {
    process.stderr.write(`hookgate runs: --state must be one of ${STATES.join(', ')}\n`);
    return 2;
  }
  const limit = listLimit('runs', flags.limit);
  if (limit === undefined) return 2;
  return withStore(flags, out, async (store, _at, say) => {
    const rows = await store.runs(limit, flags.state as ActionState | undefined);
    for (const row of rows) {
      if (flags.json) {
        out(jsonLine(row));
        continue;
      }
      const what =
        row.action.kind === 'agent'
          ? `agent=${row.action.agentId} session=${row.action.sessionKey}`
          : 'wake';
      say(
        `${row.action.receivedAt}  ${row.id}  ${row.state.padEnd(7)}  attempts=${row.attempts}  ${what}  ${runResult(row)}`,
      );
    }
    if (rows.length === 0 && !flags.json) say('No runs.');
  });
}

/** `events [--session KEY] [--json] [--limit N]`: system events of a session, newest first. */
export async function events(flags: ListFlags & { session?: string }, out: Out): Promise<number> {
  const limit = listLimit('events', flags.limit);
  if (limit === undefined) return 2;
  return withStore(flags, out, async (store, at, say) => {
    const rows = await store.events(flags.session ?? at.mainKey, limit);
    for (const event of rows) {
      if (flags.json) out(jsonLine(event));
      else {
        const state = event.setAside ? 'set aside' : event.consumedBy ? 'consumed' : 'pending';
        say(
          `${event.createdAt}  ${String(event.seq).padStart(6)}  ${event.source.padEnd(12)}  ${state.padEnd(9)}  ${event.trusted ? 'trusted  ' : 'untrusted'}  ${oneLine(event.text)}`,
        );
      }
    }
    if (rows.length === 0 && !flags.json) say('No events.');
  });
}

/**
 * A heartbeat record as `heartbeats --json` prints it: the text view's names (`trigger`, a
 * failed one's `reason`) in the camelCase of the other commands' JSON. Pure.
 */
export function heartbeatView(row: HeartbeatRow) {
  return {
    id: row.id,
    state: row.state,
    trigger: row.reason,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    events: row.events,
    reply: row.reply,
    ack: row.ack === null ? null : row.ack === 1,
    reason: row.error,
  };
}

/** `heartbeats [--json] [--limit N]`: heartbeat records, newest first, with why one failed. */
export async function heartbeats(flags: ListFlags, out: Out): Promise<number> {
  const limit = listLimit('heartbeats', flags.limit);
  if (limit === undefined) return 2;
  return withStore(flags, out, async (store, _at, say) => {
    const rows = await store.heartbeats(limit);
    for (const row of rows) {
      if (flags.json) {
        out(jsonLine(heartbeatView(row)));
        continue;
      }
      const state = row.state;
      const detail =
        state === 'failed'
          ? `reason: ${oneLine(row.error ?? '', 200)}`
          : row.ack === 1
            ? 'ack'
            : oneLine(row.reply ?? '');
      say(
        `${row.started_at}  ${row.id}  ${state.padEnd(7)}  trigger=${row.reason}  events=${row.events}  ${detail}`,
      );
    }
    if (rows.length === 0 && !flags.json) say('No heartbeats.');
  });
}

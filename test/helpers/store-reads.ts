/**
 * Reading a running hookgate's state through the runtime store's interface
 * (never SQL), so the same end-to-end test runs on every store backend:
 * runs, events, summaries, heartbeats, routes, and the deliveries the store
 * records (as the store announces them to metrics).
 */
import type { Action } from '../../schemas/action.ts';
import { onTestFinished } from 'vitest';
import { type DeliveryFinished, deliveryFinished } from '../../engine/observe/events.ts';
import type {
  HeartbeatRow,
  RunRow,
  RuntimeStore,
  SystemEvent,
} from '../../engine/runtime/runtime-store.ts';
import type { Hookgate } from '../../engine/hookgate.ts';
import { summaryContent, waitFor } from './runtime.ts';

// More than any test makes: the readers return everything, in order.
const ALL = 10_000;

/** The runtime store of a hookgate started with its runtime on. */
export function storeOf(hookgate: Pick<Hookgate, 'runtime'>): RuntimeStore {
  const store = hookgate.runtime?.store;
  if (!store) throw new Error('this hookgate runs without its runtime');
  return store;
}

/** The history turns (role and the run they came from) of an agent run's session. */
export async function turnsOf(
  hookgate: Pick<Hookgate, 'runtime'>,
  run: RunRow,
): Promise<Array<{ role: string; runId: string | null }>> {
  const { action } = run;
  if (action.kind !== 'agent') throw new Error('a wake has no history of its own');
  const owner = { agentId: action.agentId, sessionKey: action.sessionKey, kind: 'agent' as const };
  return (await storeOf(hookgate).history(owner, ALL)).map(({ role, runId }) => ({ role, runId }));
}

/** One run as the store keeps it (undefined when it is not stored). */
export function runOf(
  hookgate: Pick<Hookgate, 'runtime'>,
  id: string,
): Promise<RunRow | undefined> {
  return storeOf(hookgate).run(id);
}

/** Wait until a run reaches one of `states` (by default a final one) and return it. */
export function waitForRun(
  hookgate: Pick<Hookgate, 'runtime'>,
  id: string,
  timeoutMs = 20_000,
  states: readonly string[] = ['done', 'failed', 'dead'],
): Promise<RunRow> {
  return waitFor(
    `run ${id} to reach ${states.join('/')}`,
    async () => {
      const run = await runOf(hookgate, id);
      return run && states.includes(run.state) ? run : undefined;
    },
    timeoutMs,
  );
}

/** The events of a session, oldest first (pending and consumed). */
export async function eventsOf(
  hookgate: Pick<Hookgate, 'runtime'>,
  sessionKey = 'main',
): Promise<SystemEvent[]> {
  return (await storeOf(hookgate).events(sessionKey, ALL)).reverse();
}

/** The summaries a run posted into the main session (their wrapped lines), oldest first. */
export async function summariesOf(
  hookgate: Pick<Hookgate, 'runtime'>,
  actionId: string,
  mainKey = 'main',
): Promise<string[]> {
  return (await eventsOf(hookgate, mainKey))
    .filter((event) => event.actionId === actionId && event.source === 'hook-summary')
    .map((event) => summaryContent(event.text));
}

/** Heartbeat records in start order (the store lists them newest first). */
export async function heartbeatsOf(hookgate: Pick<Hookgate, 'runtime'>): Promise<HeartbeatRow[]> {
  return (await storeOf(hookgate).heartbeats(ALL)).reverse();
}

/** Wait for `count` finished heartbeats, then return them all in start order. */
export function waitForHeartbeats(
  hookgate: Pick<Hookgate, 'runtime'>,
  count: number,
  timeoutMs = 8_000,
): Promise<HeartbeatRow[]> {
  return waitFor(
    `${count} finished heartbeat(s)`,
    async () => {
      const rows = await heartbeatsOf(hookgate);
      return rows.filter((row) => row.state !== 'running').length >= count && rows;
    },
    timeoutMs,
  );
}

/**
 * Every delivery the store records from now until the end of the test, as it announces
 * them (source, channel, outcome): the runtime store's interface has no read of deliveries.
 */
export function watchDeliveries(): DeliveryFinished[] {
  const seen: DeliveryFinished[] = [];
  const listen = (message: unknown) => {
    seen.push(message as DeliveryFinished);
  };
  deliveryFinished.subscribe(listen);
  onTestFinished(() => {
    deliveryFinished.unsubscribe(listen);
  });
  return seen;
}

/** The mail flow's actions (hook `gmail`) a server stored, newest first. */
export async function mailActions(server: {
  store: { listActions(options: { limit: number }): Promise<Array<{ action: Action }>> };
}): Promise<Action[]> {
  const stored = await server.store.listActions({ limit: 100 });
  return stored.map((s) => s.action).filter((a) => a.hook === 'gmail');
}

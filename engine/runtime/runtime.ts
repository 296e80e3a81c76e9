/**
 * Assembling the runtime (what runs after acceptance) over its store: the
 * agents and their runners, the heartbeat (on the leading instance only)
 * and the action worker.
 */
import type { Action } from '../../schemas/action.ts';
import type { ActionStore } from '../queue/action-store.ts';
import type { LoadedConfig } from '../config.ts';
import type { ChannelAdapter } from '../delivery/adapter.ts';
import type { Logger } from '../log.ts';
import type { RecipientAllowed } from '../delivery/deliver.ts';
import type { Policy } from '../policy.ts';
import type { AgentSettings } from './agents.ts';
import { createHeartbeat, type Heartbeat } from './heartbeat.ts';
import { type LeadershipLoop, startLeadership } from './leadership-loop.ts';
import { compileLastRoutePolicy, normaliseRoute } from './last-route.ts';
import { endStaleGroup } from './runners/stale-group.ts';
import type { RuntimeStore } from './runtime-store.ts';
import { parseSchedule } from './schedule.ts';
import { type ActionWorker, createActionWorker } from './worker.ts';

export type Runtime = {
  store: RuntimeStore;
  worker: ActionWorker;
  heartbeat: Heartbeat;
  /**
   * The main session's last channel, as this instance last read or moved it (read again every
   * second): request checks need it synchronously.
   */
  lastChannel(): string | undefined;
  /** Whether this instance leads: runs the heartbeat, takes operator requests, prunes. */
  leading(): boolean;
  /**
   * Where the accepting store can, have it apply wakes as it stores them (their event in the
   * main session in the same transaction). Wakes already queued are applied first, so events
   * keep the order the wakes were accepted in.
   */
  applyWakesOnAccept(store: Pick<ActionStore, 'applyWakesOnAccept'>): Promise<void>;
  /**
   * Told of each request's actions once stored: agent actions (and wakes the store left
   * queued) are work for the worker; a wake the store applied only asks for its heartbeat.
   */
  accepted(actions: readonly Action[]): void;
  /** Stop the worker and the heartbeat (running turns go back to the queue), close the store. */
  stop(): Promise<void>;
};

/**
 * What the runtime reads from the configuration. The maps may be live (a reload replaces
 * their contents): every run looks its agent and channel up when it starts.
 */
export type RuntimeParts = {
  policy: Policy;
  adapters: ReadonlyMap<string, ChannelAdapter>;
  agents: ReadonlyMap<string, AgentSettings>;
  /** The current default agent (agents.list's default, else its first). */
  defaultAgentId: () => string;
  /** The current hooks.allowedRecipients, as delivery asks it (allowed when none is set). */
  recipientAllowed?: RecipientAllowed;
  /** Operator requests other than a heartbeat (`hookgate reload`), answered in the store. */
  onRequest?: (kind: string, seq: number) => void;
};

/**
 * `session.defaultRoute` seeds `last` (as deliveries record routes); pinned, it is written
 * at every start, so a route recorded before (by an older version, or by hand) is reset.
 */
async function seedLastRoute(
  store: RuntimeStore,
  session: LoadedConfig['config']['session'],
  adapters: ReadonlyMap<string, ChannelAdapter>,
): Promise<void> {
  const seed = session.defaultRoute;
  if (!seed) return;
  const route = normaliseRoute(seed, adapters) ?? { channel: seed.channel, recipient: seed.to };
  await store.setRoute(session.mainKey, route.channel, route.recipient, !session.pinLastRoute);
}

// How often an instance that does not lead tries to, and a leader renews its lead.
const LEAD_EVERY_MS = 1_000;
// How often a non-leader hands a heartbeat request over at most (the leader's poll).
const FORWARD_EVERY_MS = 500;
// How often the leader prunes finished actions past the store's retention.
const PRUNE_EVERY_MS = 10 * 60 * 1000;

/** Start the runtime over its store (which it closes when it stops). */
export async function startRuntime(
  store: RuntimeStore,
  loaded: LoadedConfig,
  parts: RuntimeParts,
  logger: Logger,
): Promise<Runtime> {
  const { policy, adapters, agents } = parts;
  const { config } = loaded;
  const mainKey = config.session.mainKey;
  const lastRoute = compileLastRoutePolicy(config.session, adapters);
  await seedLastRoute(store, config.session, adapters);
  let lastChannel = (await store.lastRoute(mainKey))?.channel;
  const controller = new AbortController();
  // Read per turn: a reload that changes the default agent's runner applies to the next heartbeat.
  const defaultAgent = () => {
    const agent = agents.get(parts.defaultAgentId()) ?? agents.get(policy.defaultAgentId);
    if (!agent) throw new Error(`default agent "${policy.defaultAgentId}" is not resolved`);
    return agent;
  };
  await store.claimHeartbeatTurns(defaultAgent().id);
  const routeMoved = (channel: string) => {
    lastChannel = channel;
  };
  let loop: LeadershipLoop | undefined;
  const leading = () => loop?.leading() ?? false;
  // A heartbeat asked for now that the previous process (or leader) never ran, by a wake or by
  // the operator: asked again once this instance leads. Not awaited by the lead's check, whose
  // renewal must not wait for it. One read at a time: a lead lost and gained again while a long
  // backlog is read starts none.
  let reading = false;
  const resumeIfAsked = (): void => {
    if (reading) return;
    reading = true;
    store
      .heartbeatRequestUnserved()
      .then((seq) => {
        if (seq === undefined) return store.pendingAskedNow(mainKey, controller.signal);
        // Served by the heartbeat it starts, and answered then: a later start runs none for it.
        heartbeat.requestFor(seq, 'resumed');
        return false;
      })
      .then(
        (asked) => {
          if (asked) heartbeat.requestNow('resumed');
        },
        (err: unknown) =>
          logger.warn({ err: (err as Error).message }, 'pending heartbeat requests not read'),
      )
      .finally(() => {
        reading = false;
      });
  };
  // A wake here that asks for a heartbeat now reaches the leader through the store: at most one
  // request per leader poll, the last one deferred rather than dropped (a flood of wakes must not
  // write a request each; the leader coalesces them into one heartbeat anyway).
  let forwarding: Promise<unknown> | undefined;
  let forwardedAt = Number.NEGATIVE_INFINITY;
  let deferred: NodeJS.Timeout | undefined;
  const forward = (): void => {
    if (forwarding || deferred) {
      if (!deferred) deferred = setTimeout(sendDeferred, FORWARD_EVERY_MS);
      return;
    }
    const wait = forwardedAt + FORWARD_EVERY_MS - Date.now();
    if (wait > 0) {
      deferred = setTimeout(sendDeferred, wait);
      return;
    }
    forwardedAt = Date.now();
    forwarding = store
      .request('heartbeat')
      .catch((err: unknown) =>
        logger.warn({ err: (err as Error).message }, 'heartbeat request not handed over'),
      )
      .finally(() => {
        forwarding = undefined;
      });
  };
  function sendDeferred(): void {
    deferred = undefined;
    forward();
  }
  const sweepDeliveries = (always: boolean): void => {
    heartbeat
      .sweepDeliveries(always)
      .catch((err: unknown) =>
        logger.warn({ err: (err as Error).message }, 'heartbeat deliveries not read'),
      );
  };
  // What a new leader takes over once it can say it leads: the heartbeat replies still to
  // deliver (a restart, or the old leader's retries) and a lost request for a heartbeat now. The
  // first gain comes before the leadership loop is returned: it is taken over right after.
  let gainedFirst = false;
  const takeOver = (): void => {
    sweepDeliveries(true);
    resumeIfAsked();
  };
  const heartbeat = createHeartbeat({
    store,
    agent: defaultAgent,
    adapters,
    settings: {
      mainKey,
      prompt: config.runtime.heartbeat.prompt,
      ackToken: config.runtime.heartbeat.ackToken,
      coalesceMs: config.runtime.heartbeat.coalesceMs,
      schedule: parseSchedule(config.runtime.heartbeat.every) ?? { kind: 'off' },
      maxEvents: 100,
      maxPromptBytes: config.runtime.maxPromptBytes,
      retry: config.runtime.retry,
      lastRoute,
      leaseMs: config.store.leaseSeconds * 1000,
    },
    logger,
    signal: controller.signal,
    routeMoved,
    leading,
    forward,
  });
  loop = await startLeadership({
    leadership: store.leadership,
    leaseMs: config.store.leaseSeconds * 1000,
    everyMs: LEAD_EVERY_MS,
    // A new leader ends what a dead leader's heartbeat left running, never its own (a lead it
    // lost to a stall and took back, nobody leading between), then asks again for a heartbeat
    // now that one asked for and never got.
    gained: async () => {
      const own = await heartbeat.ownRecords();
      for (const { id, pgid } of await store.recoverHeartbeats(own)) endStaleGroup(pgid, id);
    },
    leads: () => {
      if (loop) takeOver();
      else gainedFirst = true;
    },
    checked: async () => {
      // What a timer missed (an attempt that threw, one an instance left in flight) is found here.
      if (leading()) sweepDeliveries(false);
      // Another instance's delivery may have moved it; where none can, this process knows.
      if (!store.watchOutside) lastChannel = (await store.lastRoute(mainKey))?.channel;
    },
    logger,
  });
  if (gainedFirst) takeOver();
  const retentionMs = config.store.retentionDays * 24 * 60 * 60 * 1000;
  const pruneTimer = setInterval(() => {
    if (!leading()) return;
    store
      .pruneFinished(retentionMs)
      .then((count) => {
        if (count > 0) logger.info({ count }, 'finished actions past retention deleted');
      })
      .catch((err: unknown) =>
        logger.warn({ err: (err as Error).message }, 'pruning finished actions failed'),
      );
  }, PRUNE_EVERY_MS);
  pruneTimer.unref();
  const worker = createActionWorker({
    store,
    agents,
    adapters,
    heartbeat,
    settings: {
      mainKey,
      concurrency: config.runtime.concurrency,
      ackToken: config.runtime.heartbeat.ackToken,
      retry: config.runtime.retry,
      defaultAgentId: policy.defaultAgentId,
      pollMs: 500,
      historyTurns: 50,
      maxPromptBytes: config.runtime.maxPromptBytes,
      lastRoute,
      ...(parts.recipientAllowed && { recipientAllowed: parts.recipientAllowed }),
    },
    logger,
    controller,
    defaultAgentId: parts.defaultAgentId,
    leading,
    routeMoved,
    ...(parts.onRequest && { onRequest: parts.onRequest }),
  });
  heartbeat.start();
  await worker.start();
  let wakesApplied = false;
  let stopping = false;
  // The store applying wakes for this runtime, until it stops.
  let applying: Pick<ActionStore, 'applyWakesOnAccept'> | undefined;
  return {
    store,
    worker,
    heartbeat,
    lastChannel: () => lastChannel,
    leading,
    async applyWakesOnAccept(accepting) {
      if (!accepting.applyWakesOnAccept) return;
      // Before any request is taken: nothing is queued behind these while they are applied.
      try {
        for (;;) {
          const { applied, modes } = await store.applyWakes(mainKey, 500);
          if (modes.includes('now')) heartbeat.requestNow('wake');
          if (applied === 0) break;
        }
      } catch (err) {
        // The worker applies wakes as before (and retries these); only the shortcut is lost.
        logger.warn({ err: (err as Error).message }, 'queued wakes not applied at start');
        return;
      }
      accepting.applyWakesOnAccept(mainKey);
      applying = accepting;
      worker.wakesApplied();
      wakesApplied = true;
    },
    accepted(actions) {
      // Shutting down: the worker and the heartbeat take nothing new.
      if (stopping) return;
      if (!wakesApplied) return worker.kick();
      let work = false;
      for (const action of actions) {
        if (action.kind === 'agent') work = true;
        else if (action.mode === 'now') heartbeat.requestNow('wake');
      }
      if (work) worker.kick();
    },
    async stop() {
      stopping = true;
      // Wakes the server still accepts while it drains stay queued: the next start applies them
      // and runs the heartbeat a `mode: now` one asks for (applied now, it would be lost).
      applying?.applyWakesOnAccept?.(null);
      loop?.stop();
      clearInterval(pruneTimer);
      await worker.stop();
      await heartbeat.stop();
      if (deferred) clearTimeout(deferred);
      await forwarding;
      if (leading()) await store.leadership.resign().catch(() => undefined);
      await store.close();
    },
  };
}

/**
 * Assembling the runtime (what runs after acceptance): the runtime store,
 * the agents and their runners, the heartbeat and the action worker.
 */
import type { LoadedConfig } from '../config.ts';
import type { ChannelAdapter } from '../delivery/adapter.ts';
import type { Logger } from '../log.ts';
import type { Policy } from '../policy.ts';
import type { AgentSettings } from './agents.ts';
import { createHeartbeat, type Heartbeat } from './heartbeat.ts';
import { compileLastRoutePolicy, normaliseRoute } from './last-route.ts';
import { killGroup } from './runners/command.ts';
import { RuntimeStore } from './runtime-store.ts';
import { parseSchedule } from './schedule.ts';
import { type ActionWorker, createActionWorker } from './worker.ts';

export type Runtime = {
  store: RuntimeStore;
  worker: ActionWorker;
  heartbeat: Heartbeat;
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
  /** Operator requests other than a heartbeat (`hookgate reload`), answered in the store. */
  onRequest?: (kind: string, seq: number) => void;
};

/**
 * `session.defaultRoute` seeds `last` (as deliveries record routes); pinned, it is written
 * at every start, so a route recorded before (by an older version, or by hand) is reset.
 */
function seedLastRoute(
  store: RuntimeStore,
  session: LoadedConfig['config']['session'],
  adapters: ReadonlyMap<string, ChannelAdapter>,
): void {
  const seed = session.defaultRoute;
  if (!seed) return;
  const route = normaliseRoute(seed, adapters) ?? { channel: seed.channel, recipient: seed.to };
  store.setRoute(session.mainKey, route.channel, route.recipient, !session.pinLastRoute);
}

/** Start the runtime over the data directory's store. */
export function startRuntime(
  loaded: LoadedConfig,
  parts: RuntimeParts,
  logger: Logger,
): Runtime {
  const { policy, adapters, agents } = parts;
  const { config } = loaded;
  const store = RuntimeStore.open(loaded.dataDir);
  // A heartbeat a killed instance left running: end its runner; its events stay pending.
  for (const pgid of store.recoverHeartbeats()) killGroup(pgid);
  const lastRoute = compileLastRoutePolicy(config.session, adapters);
  seedLastRoute(store, config.session, adapters);
  const controller = new AbortController();
  // Read per turn: a reload that changes the default agent's runner applies to the next heartbeat.
  const defaultAgent = () => {
    const agent = agents.get(parts.defaultAgentId()) ?? agents.get(policy.defaultAgentId);
    if (!agent) throw new Error(`default agent "${policy.defaultAgentId}" is not resolved`);
    return agent;
  };
  store.claimHeartbeatTurns(defaultAgent().id);
  const heartbeat = createHeartbeat({
    store,
    agent: defaultAgent,
    adapters,
    settings: {
      mainKey: config.session.mainKey,
      prompt: config.runtime.heartbeat.prompt,
      ackToken: config.runtime.heartbeat.ackToken,
      schedule: parseSchedule(config.runtime.heartbeat.every) ?? { kind: 'off' },
      maxEvents: 100,
      retry: config.runtime.retry,
      lastRoute,
    },
    logger,
    signal: controller.signal,
  });
  const worker = createActionWorker({
    store,
    agents,
    adapters,
    heartbeat,
    settings: {
      mainKey: config.session.mainKey,
      concurrency: config.runtime.concurrency,
      ackToken: config.runtime.heartbeat.ackToken,
      retry: config.runtime.retry,
      defaultAgentId: policy.defaultAgentId,
      pollMs: 500,
      historyTurns: 50,
      lastRoute,
    },
    logger,
    controller,
    defaultAgentId: parts.defaultAgentId,
    ...(parts.onRequest && { onRequest: parts.onRequest }),
  });
  heartbeat.start();
  worker.start();
  return {
    store,
    worker,
    heartbeat,
    async stop() {
      await worker.stop();
      await heartbeat.stop();
      store.close();
    },
  };
}

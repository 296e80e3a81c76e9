/**
 * Assembling the runtime (what runs after acceptance): the runtime store,
 * the agents and their runners, the heartbeat and the action worker.
 */
import type { LoadedConfig } from '../config.ts';
import type { ChannelAdapter } from '../delivery/adapter.ts';
import type { Logger } from '../log.ts';
import type { Policy } from '../policy.ts';
import { resolveAgents } from './agents.ts';
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
  policy: Policy,
  logger: Logger,
  adapters: ReadonlyMap<string, ChannelAdapter>,
): Runtime {
  const { config } = loaded;
  const store = RuntimeStore.open(loaded.dataDir);
  // A heartbeat a killed instance left running: end its runner; its events stay pending.
  for (const pgid of store.recoverHeartbeats()) killGroup(pgid);
  const lastRoute = compileLastRoutePolicy(config.session, adapters);
  seedLastRoute(store, config.session, adapters);
  const controller = new AbortController();
  const agents = resolveAgents(config, loaded.baseDir, policy.defaultAgentId);
  const defaultAgent = agents.get(policy.defaultAgentId);
  if (!defaultAgent) throw new Error(`default agent "${policy.defaultAgentId}" is not resolved`);
  store.claimHeartbeatTurns(defaultAgent.id);
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

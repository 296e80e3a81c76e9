/**
 * Prometheus metrics: a registry of its own (two instances never collide)
 * fed by the diagnostics channels of events.ts, subscribed on creation and
 * unsubscribed on close. Every label value is bounded: routes, agents,
 * channels and mappings come from the configuration, the rest are fixed
 * sets; a hook name nothing serves is "(unknown)", never the raw name. No
 * label carries payload text, addresses or secrets.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import {
  type ActionsCommitted,
  type AuthFailed,
  actionsCommitted,
  type AdminRefused,
  adminRefused,
  authFailed,
  authLocked,
  type DeliveryFinished,
  deliveryFinished,
  type RequestFinished,
  type RunFinished,
  type MessageRefused,
  messageRefused,
  requestFinished,
  runFinished,
  type StageTimed,
  stageTimed,
  type TransformCalled,
  type TransformRestarted,
  transformCalled,
  transformRestarted,
} from './events.ts';

export type MetricsDeps = {
  /** Actions by state (queued, running, done, failed, dead), read at each scrape. */
  queueDepth?: () => Promise<Record<string, number>> | Record<string, number>;
  /** Whether this instance leads (runs the heartbeat), read at each scrape. */
  leading?: () => boolean;
};

export type Metrics = {
  /** The Content-Type of what render() returns (Prometheus text format). */
  contentType: string;
  /** The metrics in Prometheus text format. */
  render(): Promise<string>;
  /** Stop listening (the registry is emptied). */
  close(): void;
};

/** The label of a route: its hook name, or "(unknown)" when no served route was picked. */
export const UNKNOWN = '(unknown)';

const label = (name: string | undefined): string => (name ? name : UNKNOWN);

// Seconds. Stages take microseconds to (a commit's fsync) milliseconds.
const STAGE_BUCKETS = [1e-5, 5e-5, 1e-4, 5e-4, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5];
const REQUEST_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const RUN_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];
const TRANSFORM_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5];
const QUEUE_STATES: ReadonlySet<string> = new Set(['queued', 'running', 'done', 'failed', 'dead']);

/** Create the metrics and start listening. */
export function createMetrics(deps: MetricsDeps = {}): Metrics {
  const registry = new Registry();
  const registers = [registry];
  // The event-loop delay sampler wakes every `precision` ms: at the default 10 ms it costs
  // about 1% of a core on an idle server, at 50 ms about 0.3%, still fine enough to see stalls.
  // prom-client cannot stop it: create the metrics once per process.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 50 });

  const requests = new Counter({
    name: 'hookgate_requests_total',
    help: 'Requests answered, by route, HTTP status and error code ("" when none).',
    labelNames: ['route', 'status', 'code'] as const,
    registers,
  });
  const requestSeconds = new Histogram({
    name: 'hookgate_request_duration_seconds',
    help: 'Time from a request arriving to its answer, by route.',
    labelNames: ['route'] as const,
    buckets: REQUEST_BUCKETS,
    registers,
  });
  const stageSeconds = new Histogram({
    name: 'hookgate_stage_duration_seconds',
    help: 'Time spent in each stage of the request path.',
    labelNames: ['stage'] as const,
    buckets: STAGE_BUCKETS,
    registers,
  });
  const replays = new Counter({
    name: 'hookgate_idempotent_replays_total',
    help: 'Requests answered from an earlier acceptance (same delivery id or Idempotency-Key).',
    labelNames: ['route'] as const,
    registers,
  });
  const accepted = new Counter({
    name: 'hookgate_actions_accepted_total',
    help: 'Actions built from requests, by route (before they are stored).',
    labelNames: ['route'] as const,
    registers,
  });
  const committed = new Counter({
    name: 'hookgate_actions_committed_total',
    help: 'Actions stored durably (what the agent side will run).',
    registers,
  });
  const authFailures = new Counter({
    name: 'hookgate_auth_failures_total',
    help: 'Failed authentications, by route and what failed (token, verify_token, signature check).',
    labelNames: ['route', 'reason'] as const,
    registers,
  });
  const adminRefusals = new Counter({
    name: 'hookgate_admin_refusals_total',
    help: 'Requests the admin listener refused before they ran: unauthorized, forbidden_host, forbidden_origin.',
    labelNames: ['code'] as const,
    registers,
  });
  const lockouts = new Counter({
    name: 'hookgate_auth_lockouts_total',
    help: 'Client addresses locked out after too many failed authentications.',
    registers,
  });
  const runs = new Counter({
    name: 'hookgate_agent_runs_total',
    help: 'Agent turns, by agent and outcome (done, failed, timeout, retry, dead, interrupted).',
    labelNames: ['agent', 'outcome'] as const,
    registers,
  });
  const runSeconds = new Histogram({
    name: 'hookgate_agent_run_duration_seconds',
    help: 'Duration of agent turns, by agent.',
    labelNames: ['agent'] as const,
    buckets: RUN_BUCKETS,
    registers,
  });
  const deliveries = new Counter({
    name: 'hookgate_deliveries_total',
    help: 'Reply deliveries by channel, final outcome (sent, failed, skipped, dead) and source.',
    labelNames: ['channel', 'outcome', 'source'] as const,
    registers,
  });
  const transformCalls = new Counter({
    name: 'hookgate_transform_calls_total',
    help: 'Transform calls, by mapping and outcome (ok, failed, timeout, invalid_output, busy).',
    labelNames: ['mapping', 'outcome'] as const,
    registers,
  });
  const transformSeconds = new Histogram({
    name: 'hookgate_transform_call_duration_seconds',
    help: 'Duration of transform calls, by mapping (waiting for a process included).',
    labelNames: ['mapping'] as const,
    buckets: TRANSFORM_BUCKETS,
    registers,
  });
  const transformRestarts = new Counter({
    name: 'hookgate_transform_restarts_total',
    help: 'Transform processes replaced, by reason (crash, timeout, invalid_message, load_timeout).',
    labelNames: ['reason'] as const,
    registers,
  });
  if (deps.queueDepth) {
    const read = deps.queueDepth;
    new Gauge({
      name: 'hookgate_queue_actions',
      help: 'Stored actions by state (queued, running, done, failed, dead).',
      labelNames: ['state'] as const,
      registers,
      async collect() {
        try {
          const counts = await read();
          for (const [state, count] of Object.entries(counts))
            if (QUEUE_STATES.has(state)) this.set({ state }, count);
        } catch {
          // An unreadable store shows as missing series, not as stale numbers or a failed scrape.
          this.reset();
        }
      },
    });
  }

  if (deps.leading) {
    const leading = deps.leading;
    new Gauge({
      name: 'hookgate_leader',
      help: 'Whether this instance leads: runs the heartbeat and takes operator requests (1 or 0).',
      registers,
      collect() {
        this.set(leading() ? 1 : 0);
      },
    });
  }

  const handlers: Array<[string, (message: unknown) => void]> = [
    [
      requestFinished.name as string,
      (m) => {
        const e = m as RequestFinished;
        const route = label(e.exchange.route?.name);
        requests.inc({ route, status: String(e.status), code: e.code ?? '' });
        requestSeconds.observe({ route }, e.durationMs / 1000);
        if (e.replayed) replays.inc({ route });
        const count = e.exchange.accepted?.actions.length ?? 0;
        if (count > 0) accepted.inc({ route }, count);
      },
    ],
    [
      messageRefused.name as string,
      (m) => {
        const e = m as MessageRefused;
        requests.inc({ route: label(undefined), status: String(e.status), code: e.code });
      },
    ],
    [
      stageTimed.name as string,
      (m) => stageSeconds.observe({ stage: (m as StageTimed).stage }, (m as StageTimed).ms / 1000),
    ],
    [actionsCommitted.name as string, (m) => committed.inc((m as ActionsCommitted).count)],
    [
      authFailed.name as string,
      (m) => {
        const e = m as AuthFailed;
        authFailures.inc({ route: label(e.route), reason: e.failure });
      },
    ],
    [authLocked.name as string, () => lockouts.inc()],
    [adminRefused.name as string, (m) => adminRefusals.inc({ code: (m as AdminRefused).code })],
    [
      runFinished.name as string,
      (m) => {
        const e = m as RunFinished;
        runs.inc({ agent: e.agentId, outcome: e.outcome });
        runSeconds.observe({ agent: e.agentId }, e.durationMs / 1000);
      },
    ],
    [
      deliveryFinished.name as string,
      (m) => {
        const e = m as DeliveryFinished;
        deliveries.inc({ channel: e.channel, outcome: e.outcome, source: e.source });
      },
    ],
    [
      transformCalled.name as string,
      (m) => {
        const e = m as TransformCalled;
        const mapping = label(e.mappingId);
        transformCalls.inc({ mapping, outcome: e.outcome });
        if (e.outcome !== 'busy') transformSeconds.observe({ mapping }, e.durationMs / 1000);
      },
    ],
    [
      transformRestarted.name as string,
      (m) => transformRestarts.inc({ reason: (m as TransformRestarted).reason }),
    ],
  ];
  // A subscriber that throws would surface as an uncaught exception in the publisher's
  // process: a metric that cannot be counted is skipped instead.
  const guarded = handlers.map(([name, handle]): [string, (message: unknown) => void] => [
    name,
    (message) => {
      try {
        handle(message);
      } catch {
        // Skipped: counting must never fail a request or a run.
      }
    },
  ]);
  for (const [name, handle] of guarded) subscribe(name, handle);

  return {
    contentType: registry.contentType,
    render: () => registry.metrics(),
    close() {
      for (const [name, handle] of guarded) unsubscribe(name, handle);
      registry.clear();
    },
  };
}

/**
 * Assembling a running hookgate from a validated configuration: store,
 * limiter, the current configuration's generation (routes, stages,
 * transforms) behind a reload, dispatcher, HTTP server with its timeouts,
 * the runtime, the admin listener, and an orderly shutdown. Usable as a
 * library by a gateway that embeds hookgate.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type AdminListener, startAdmin } from './admin/server.ts';
import { adminDeps, type AdminParts } from './admin/wiring.ts';
import { guessableTokens } from './audit.ts';
import { createClientAddressResolver } from './client-address.ts';
import { capConnections } from './connection-limit.ts';
import { type LoadedConfig, loadConfigDocument } from './config.ts';
import { compileConfig } from './config/compile.ts';
import { createLedger } from './dispatcher.ts';
import { createLogger, type Logger, requestLineLogger } from './log.ts';
import { recipientAllowedBy } from './policy.ts';
import { createRequestHandler } from './ingress/http-handler.ts';
import { type MailFlow, startMailFlow } from './gmail/flow.ts';
import type { ActionStore } from './queue/action-store.ts';
import { type Backend, openBackend } from './store/backend.ts';
import { SqliteRuntimeStore } from './store/sqlite/runtime-store.ts';
import { agentPathProblems } from './runtime/runner-paths.ts';
import { countingRefusedFailures } from './limiter-fallback.ts';
import { createLockouts } from './lockouts.ts';
import { createMemoryLimiter, reportingStoreErrors } from './rate-limit.ts';
import { refuseMessage, whenAnswersOut } from './ingress/parser-refusals.ts';
import { messageRefused } from './observe/events.ts';
import { responseOnDetached } from './respond.ts';
import { warmFolds } from './safety/skeleton.ts';
import { type Generation, startGeneration } from './reload/generation.ts';
import { createLiveConfig, type LiveConfig, type ReloadOutcome } from './reload/live-config.ts';
import { LiveMap } from './reload/live-map.ts';
import { readConfigOffThread } from './reload/read-config.ts';
import { watchForReload } from './reload/watch.ts';
import { type Runtime, startRuntime } from './runtime/runtime.ts';

export type Hookgate = {
  /** Base URL the server listens on, e.g. http://127.0.0.1:8787 */
  url: string;
  server: Server;
  /** The runtime, unless started with `runtime: false`. */
  runtime: Runtime | undefined;
  store: ActionStore;
  /** Where the store is: the data directory, or the PostgreSQL database (no password). */
  storeDescription: string;
  /** The mail flow, when hooks.gmail.account is set. */
  mail: MailFlow | undefined;
  logger: Logger;
  /** The running configuration (its current generation, the last reload). */
  live: LiveConfig;
  /** The admin listener, when `admin` is configured. */
  admin: AdminListener | undefined;
  /** Reload from the config file (as SIGHUP does); the outcome says what happened. */
  reload(trigger?: string): Promise<ReloadOutcome>;
  /** Stop accepting, finish in-flight requests, commit and close the store. */
  close(): Promise<void>;
};

export type StartOptions = {
  host?: string;
  port?: number;
  logger?: Logger;
  store?: ActionStore;
  /** Run the runtime (worker, heartbeat); default true. Off: actions are only accepted and stored. */
  runtime?: boolean;
  /** The environment a reload substitutes `${VAR}` from (default process.env). */
  env?: NodeJS.ProcessEnv;
};

const PRUNE_EVERY_MS = 10 * 60 * 1000;

/** Start hookgate and resolve once it is listening. */
export async function startHookgate(
  loaded: LoadedConfig,
  options: StartOptions = {},
): Promise<Hookgate> {
  const { config } = loaded;
  // Compiled before anything is opened: a bad mapping stops the boot with a ConfigError.
  const compiled = compileConfig(loaded);
  const logger = options.logger ?? createLogger(config.log.level);
  if (options.runtime !== false) warnPathProblems(loaded, logger);
  const backend = options.store
    ? givenStore(options.store, loaded.dataDir)
    : await openBackend({
        dataDir: loaded.dataDir,
        store: config.store,
        commitDelayMs: config.runtime.commitDelayMs,
        onWarning: (message) => logger.warn({ dataDir: loaded.dataDir }, message),
        onError: (err) => logger.warn({ err: err.message }, 'store connection lost'),
      });
  const store = backend.actions;
  // The runtime reads agents and channels through these: a reload swaps their contents.
  const agents = new LiveMap(compiled.agents);
  const adapters = new LiveMap(compiled.adapters);
  let live: LiveConfig | undefined;
  const runtime =
    options.runtime === false
      ? undefined
      : await startRuntime(
          backend.openRuntime(),
          loaded,
          {
            policy: compiled.policy,
            agents,
            adapters,
            defaultAgentId: () => (live?.current().compiled ?? compiled).policy.defaultAgentId,
            // The current generation's list: a reload may add, change or drop it.
            recipientAllowed: (channel, to) =>
              recipientAllowedBy((live?.current().compiled ?? compiled).policy)(channel, to),
            onRequest: (kind, seq) => answerRequest(kind, seq),
          },
          logger,
        );
  let closing: Promise<void> | undefined;
  // With the runtime on, the store applies wakes as it stores them where it can (one
  // transaction instead of an insert now and a claim, an update and an event later).
  await runtime?.applyWakesOnAccept(store);
  const ledger = createLedger(store, { afterCommit: (actions) => runtime?.accepted(actions) });
  // Shared by every generation: a reload never lifts a lockout.
  // Shared by the instances on PostgreSQL: a lock begun on one is refused on all.
  // A failure the store cannot count (an outage) is counted by this instance alone meanwhile;
  // a lock both count (a held-up count landing late) is one lock to the metric.
  const lockouts = createLockouts(config.hooks.authRateLimit);
  const limiter = reportingStoreErrors(
    countingRefusedFailures(
      backend.openLimiter(config.hooks.authRateLimit, { lockouts }),
      config.hooks.authRateLimit,
      { lockouts },
    ),
    logger,
  );
  const generationDeps = {
    logger,
    // The listener's timeouts are fixed at start; the body stage keeps to the same.
    requestTimeoutMs: config.server.requestTimeoutMs,
    ledger,
    limiter,
    resolveClient: createClientAddressResolver(config.server.trustedProxies),
    lastChannel: () => runtime?.lastChannel(),
  };
  const first = await startGeneration(compiled, generationDeps);
  live = createLiveConfig(first, {
    // Parsed off the main thread: a slow file must not stall the requests being served.
    load: async () =>
      loadConfigDocument(await readConfigOffThread(loaded.file as string), options.env),
    start: (next) => {
      if (runtime) warnPathProblems(next.loaded, logger);
      return startGeneration(next, generationDeps);
    },
    swapped: (next: Generation) => {
      agents.swap(next.compiled.agents);
      adapters.swap(next.compiled.adapters);
    },
    warningsOf: (next) =>
      [
        ...(runtime ? agentPathProblems(next.loaded.config, next.loaded.baseDir, process.env) : []),
        // A reload reads a file: a token it brings is named by its setting, as serve's start does.
        ...guessableTokens(next.loaded.config).map((w) => ({
          path: w.setting,
          message: w.message,
        })),
      ].map((problem) => `${problem.path}: ${problem.message}`),
    logger,
  });
  const current = live;
  // `hookgate reload` asks through the store; its outcome is the answer it waits for.
  function answerRequest(kind: string, seq: number): void {
    if (kind !== 'reload' || !runtime) return;
    void current
      .reload('hookgate reload')
      .then((outcome) => {
        // Shutting down closes the store: the command that asked then says nobody answered.
        if (closing === undefined) return runtime.store.answerRequest(seq, JSON.stringify(outcome));
      })
      .catch((err: unknown) =>
        logger.warn({ err: (err as Error).message }, 'could not answer the reload request'),
      );
  }
  // The mail flow (when hooks.gmail.account is set): its own push listener and sync job.
  const mail = await startMailFlow(loaded, {
    routes: liveRoutes(current),
    holdRoutes: () => {
      const generation = current.current().acquire();
      return {
        routes: generation.routes,
        hooks: generation.compiled.loaded.config.hooks,
        release: () => generation.release(),
      };
    },
    ledger,
    logger,
    notify: (text) => {
      runtime?.store
        .addEvent({ sessionKey: config.session.mainKey, text, source: 'gmail', trusted: true })
        .catch((err: unknown) =>
          logger.error({ err: (err as Error).message }, 'mail notice not recorded'),
        );
    },
  });
  const handler = createRequestHandler({
    acquire: () => current.current().acquire(),
    logger,
    draining: () => closing !== undefined,
  });

  const server = createServer(
    {
      // A slow client cannot hold a socket for minutes (Node's defaults are 60 s / 300 s / 30 s).
      // Node requires headersTimeout <= requestTimeout: a short request timeout shortens both.
      headersTimeout: Math.min(config.server.headersTimeoutMs, config.server.requestTimeoutMs),
      // Backstop only: the body stage answers 408 itself at requestTimeoutMs.
      requestTimeout: config.server.requestTimeoutMs + 5_000,
      connectionsCheckingInterval: 1_000,
      keepAliveTimeout: config.server.keepAliveTimeoutMs,
      // A missing Host is refused by the admit stage, as JSON with a request id and logged.
      requireHostHeader: false,
    },
    handler,
  );
  capConnections(server, config.server);
  // Node would answer 100 Continue before the handler runs; the pipeline does it after authentication.
  server.on('checkContinue', handler);
  // Node would answer any other expectation 417 with an empty body before the path or the lock
  // are looked at; the admit stage refuses it in its turn.
  server.on('checkExpectation', handler);
  // Node would drop a CONNECT without a word: it runs the stages too (404 or 405), then closes,
  // after the answers its connection still owes. A listener of node:http must never throw: it
  // runs in the parser's callback, where an exception ends the process.
  server.on('connect', (req: IncomingMessage, socket: Duplex) =>
    whenAnswersOut(socket, () => {
      try {
        handler(req, responseOnDetached(req, socket));
      } catch (err) {
        logger.error({ err: (err as Error).message }, 'CONNECT not answered');
        socket.destroy();
      }
    }),
  );
  // In order with the answers the connection still owes (engine/ingress/parser-refusals.ts);
  // each answered refusal gets its request line and is counted, as the handler's answers are.
  const refusalLines = requestLineLogger(logger);
  server.on('clientError', (err: NodeJS.ErrnoException, socket) =>
    refuseMessage(socket, err.code, ({ status, code, requestId }) => {
      const client = (socket as Partial<Socket>).remoteAddress ?? '';
      refusalLines.info({ requestId, client, status, code }, 'request');
      if (messageRefused.hasSubscribers) messageRefused.publish({ status, code });
    }),
  );

  const prune = setInterval(() => {
    // The mail flow's message keys back to where its fallback would read again.
    store
      .pruneIdempotency(Date.now() - current.current().routes.maxKeyWindowMs, mail?.keepKeys())
      .catch((err: unknown) => logger.warn({ err }, 'prune failed'));
  }, PRUNE_EVERY_MS);
  prune.unref();

  const parts: AdminParts = { live: current, store, runtime, mail, logger };
  const hooksPort = options.port ?? config.server.port;
  const hooksHost = options.host ?? config.server.host;
  // The config's rule (admin.port against server.port on the same host) for a --port or --host
  // given at start.
  if (
    config.admin &&
    hooksPort !== 0 &&
    hooksPort === config.admin.port &&
    hooksHost === config.admin.host
  )
    throw new Error(
      `port ${hooksPort} is the admin listener's (admin.port): start the hooks on another port with --port N`,
    );
  const admin = config.admin ? await startAdminListener(config, parts) : undefined;
  await listen(server, hooksHost, hooksPort);
  const stopWatch =
    config.reload.watch && loaded.file
      ? watchForReload({
          file: loaded.file,
          transformsRoot: loaded.transformsRoot,
          debounceMs: config.reload.debounceMs,
          logger,
          changed: (what) => {
            logger.info({ changed: what }, 'config changed on disk: reloading');
            void current.reload('file change');
          },
        })
      : undefined;
  // The safety wrapper's per-character folds, computed while idle rather than by the first sender.
  warmFolds();
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  return {
    url,
    server,
    runtime,
    store,
    storeDescription: backend.describe,
    mail,
    logger,
    live: current,
    admin: admin?.listener,
    reload: (trigger = 'library') => current.reload(trigger),
    close() {
      stopWatch?.();
      // The mail flow first: its sync writes to the store that shutdown closes last.
      closing ??= (mail?.close() ?? Promise.resolve())
        .then(() => admin?.close())
        .then(() => shutdown(server, backend, prune, config.server.shutdownGraceMs, runtime))
        .finally(() => Promise.all([current.close(), limiter.close()]));
      return closing;
    },
  };
}

/** Runner commands or workspaces that do not exist: warned, since a runner may be installed later. */
function warnPathProblems(loaded: LoadedConfig, logger: Logger): void {
  for (const problem of agentPathProblems(loaded.config, loaded.baseDir, process.env))
    logger.warn({ path: problem.path }, problem.message);
}

/** The current generation's routes, for what outlives a reload (the mail flow, pruning). */
function liveRoutes(live: LiveConfig) {
  return {
    find: (hook: string) => live.current().routes.find(hook),
    get maxKeyWindowMs() {
      return live.current().routes.maxKeyWindowMs;
    },
  };
}

async function startAdminListener(
  config: LoadedConfig['config'],
  parts: AdminParts,
): Promise<{ listener: AdminListener; close(): Promise<void> }> {
  const settings = config.admin as NonNullable<typeof config.admin>;
  const deps = adminDeps(config, parts);
  try {
    const listener = await startAdmin(
      {
        host: settings.host,
        port: settings.port,
        ...(settings.token !== undefined && { token: settings.token }),
        logger: parts.logger,
        maxBodyBytes: () => parts.live.current().compiled.loaded.config.hooks.maxBodyBytes,
        caps: config.server,
      },
      deps.deps,
    );
    return {
      listener,
      async close() {
        await listener.close();
        deps.close();
      },
    };
  } catch (err) {
    deps.close();
    throw err;
  }
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? inUse(host, port) : err);
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
}

/** The port is taken (another hookgate, often): say how to pick another. */
function inUse(host: string, port: number): Error {
  return new Error(
    `${host}:${port} is already in use (another server holds it): start on another port with --port N (through npm: npm start -- --port N), or set server.port in the config`,
  );
}

async function shutdown(
  server: Server,
  backend: Backend,
  prune: NodeJS.Timeout,
  graceMs: number,
  runtime: Runtime | undefined,
) {
  clearInterval(prune);
  // Runs in progress are interrupted and go back to the queue; the next start resumes them.
  const runtimeStopped = runtime?.stop();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const force = setTimeout(() => server.closeAllConnections(), graceMs);
  force.unref();
  await closed;
  clearTimeout(force);
  await runtimeStopped;
  await backend.close();
}

/** A store the embedder passed in (tests, benchmarks): the runtime's records stay in SQLite. */
function givenStore(actions: ActionStore, dataDir: string): Backend {
  return {
    actions,
    openRuntime: () => SqliteRuntimeStore.open(dataDir),
    openLimiter: createMemoryLimiter,
    describe: dataDir,
    close: () => actions.close(),
  };
}

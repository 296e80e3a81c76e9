/**
 * Assembling a running hookgate from a validated configuration: store,
 * limiter, guard, routes, dispatcher, HTTP server with its timeouts, and an
 * orderly shutdown. Usable as a library by a gateway that embeds hookgate.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClientAddressResolver } from './client-address.ts';
import { createConnectionLimiter } from './connection-limit.ts';
import { ConfigError, type LoadedConfig } from './config.ts';
import { createLedger } from './dispatcher.ts';
import { createTokenCheck } from './auth.ts';
import { createAdapters } from './delivery/registry.ts';
import { createLogger, type Logger } from './log.ts';
import { createRequestHandler } from './ingress/http-handler.ts';
import { compileRoutes, routeContext } from './ingress/routes.ts';
import { createStages } from './ingress/stages.ts';
import { type MailFlow, startMailFlow } from './gmail/flow.ts';
import { checkRecipient, type Policy, policyFromConfig } from './policy.ts';
import type { ActionStore } from './queue/action-store.ts';
import { openSqliteStore } from './queue/sqlite-store.ts';
import { agentPathProblems } from './runtime/runner-paths.ts';
import { createMemoryLimiter } from './rate-limit.ts';
import { answerClientError } from './respond.ts';
import { warmFolds } from './safety/skeleton.ts';
import { compileMappings } from './mappings.ts';
import { type Runtime, startRuntime } from './runtime/runtime.ts';
import { startTransforms } from './sandbox/start.ts';

export type Hookgate = {
  /** Base URL the server listens on, e.g. http://127.0.0.1:8787 */
  url: string;
  server: Server;
  /** The runtime, unless started with `runtime: false`. */
  runtime: Runtime | undefined;
  store: ActionStore;
  /** The mail flow, when hooks.gmail.account is set. */
  mail: MailFlow | undefined;
  logger: Logger;
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
};

/** session.defaultRoute's recipient must have its channel's form (a ConfigError otherwise). */
export function checkDefaultRoute(config: LoadedConfig['config'], policy: Policy): void {
  const seed = config.session.defaultRoute;
  if (!seed) return;
  try {
    checkRecipient(policy, seed.channel, seed.to);
  } catch (err) {
    throw new ConfigError('session.defaultRoute.to', (err as Error).message);
  }
}

const PRUNE_EVERY_MS = 10 * 60 * 1000;

/** Start hookgate and resolve once it is listening. */
export async function startHookgate(
  loaded: LoadedConfig,
  options: StartOptions = {},
): Promise<Hookgate> {
  const { config } = loaded;
  // One set of channel adapters serves the door's recipient checks and delivery.
  const adapters = createAdapters(config.channels);
  const policy = policyFromConfig(config, adapters);
  // Compiled before anything is opened: a bad mapping stops the boot with a ConfigError.
  const mappings = compileMappings(config, policy, loaded.transformsRoot);
  checkDefaultRoute(config, policy);
  const logger = options.logger ?? createLogger(config.log.level);
  if (options.runtime !== false) {
    // Warned, not refused: a runner may be installed after the start; its runs fail plainly.
    for (const problem of agentPathProblems(config, loaded.baseDir, process.env))
      logger.warn({ path: problem.path }, problem.message);
  }
  const transforms = await startTransforms(config, mappings, logger);
  const store =
    options.store ??
    (await openSqliteStore(loaded.dataDir, {
      commitDelayMs: config.runtime.commitDelayMs,
      onWarning: (message) => logger.warn({ dataDir: loaded.dataDir }, message),
    }));
  const runtime =
    options.runtime === false ? undefined : startRuntime(loaded, policy, logger, adapters);
  let closing: Promise<void> | undefined;
  const routes = compileRoutes(
    config,
    mappings,
    routeContext(config, policy, {
      lastChannel: () => runtime?.store.lastRoute(config.session.mainKey)?.channel,
      ...(transforms && { transforms }),
    }),
  );
  const ledger = createLedger(store, { afterCommit: () => runtime?.worker.kick() });
  // The mail flow (when hooks.gmail.account is set): its own push listener and sync job.
  const mail = await startMailFlow(loaded, {
    routes,
    ledger,
    logger,
    notify: (text) =>
      runtime?.store.addEvent({
        sessionKey: config.session.mainKey,
        text,
        source: 'gmail',
        trusted: true,
      }),
  });
  const handler = createRequestHandler({
    stages: createStages({
      enabled: config.hooks.enabled,
      hooksPath: config.hooks.path,
      routes,
      limiter: createMemoryLimiter(config.hooks.authRateLimit),
      resolveClient: createClientAddressResolver(config.server.trustedProxies),
      tokenMatches: createTokenCheck(config.hooks.token ?? ''),
      body: {
        maxBytes: config.hooks.maxBodyBytes,
        maxDepth: config.hooks.maxJsonDepth,
        timeoutMs: config.server.requestTimeoutMs,
      },
      ledger,
    }),
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
    },
    handler,
  );
  // Past either cap a new socket is closed at once, unanswered: answering costs what the cap saves.
  server.maxConnections = config.server.maxConnections;
  const perAddress = createConnectionLimiter(
    config.server.maxConnectionsPerAddress,
    config.server.trustedProxies,
  );
  server.on('connection', (socket) => perAddress.admit(socket));
  // Node would answer 100 Continue before the handler runs; the pipeline does it after authentication.
  server.on('checkContinue', handler);
  server.on('clientError', (err: NodeJS.ErrnoException, socket) =>
    answerClientError(socket, err.code),
  );

  const prune = setInterval(() => {
    store
      .pruneIdempotency(Date.now() - routes.maxKeyWindowMs)
      .catch((err: unknown) => logger.warn({ err }, 'prune failed'));
  }, PRUNE_EVERY_MS);
  prune.unref();

  await listen(server, options.host ?? config.server.host, options.port ?? config.server.port);
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
    mail,
    logger,
    close() {
      // The mail flow first: its sync writes to the store that shutdown closes last.
      closing ??= (mail?.close() ?? Promise.resolve())
        .then(() => shutdown(server, store, prune, config.server.shutdownGraceMs, runtime))
        .finally(() => transforms?.close());
      return closing;
    },
  };
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

async function shutdown(
  server: Server,
  store: ActionStore,
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
  await store.close();
}

/**
 * The admin listener: a second node:http server for operators, with health
 * and readiness probes, metrics, the web console and its API. Off unless
 * `admin` is configured; the wiring starts it and prints where it listens.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { capConnections, type ListenerCaps } from '../connection-limit.ts';
import { contentCodingRefusal } from '../ingress/content-types.ts';
import { originForm } from '../ingress/admit.ts';
import { framingRefusal } from '../ingress/framing.ts';
import { owesAnswer, refuseMessage } from '../ingress/parser-refusals.ts';
import type { Logger } from '../log.ts';
import { AdminError } from './admin-errors.ts';
import { type ApiContext, createApi } from './api.ts';
import { consoleAssets } from './console/assets.ts';
import type { AdminDeps } from './deps.ts';
import { createGuard } from './guard.ts';
import { adminRefused } from '../observe/events.ts';
import { COMMON_HEADERS, sendAdminError, sendBody, sendJson } from './reply.ts';

export type AdminSettings = {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Required as `Authorization: Bearer` on everything but the page's own files (/healthz too). */
  token?: string;
  logger: Logger;
  /** Bound of a playground payload: hooks.maxBodyBytes, as the configuration now in force has it. */
  maxBodyBytes: () => number;
  /** How long a request body may take to arrive (default 10 s). */
  bodyTimeoutMs?: number;
  /** The connection caps, as the hook listener's (`server`). */
  caps: ListenerCaps;
};

export type AdminListener = { url: string; close(): Promise<void> };

type Handler = (ctx: ApiContext) => void | Promise<void>;
type Route = {
  path: RegExp;
  /** Public: the page and its assets (they hold no data) and the liveness probe. */
  open?: boolean;
  methods: Partial<Record<'GET' | 'POST', Handler>>;
};

const ID = '([A-Za-z0-9._:-]{1,128})';
const JSON_TYPE = /^application\/json\s*(;|$)/i;

/** The handler of a method on a route: HEAD is GET's (Node sends its headers, no body). Pure. */
function handlerFor(route: Route, method: string): Handler | undefined {
  if (method === 'HEAD') return route.methods.GET;
  return method === 'GET' || method === 'POST' ? route.methods[method] : undefined;
}

/** The `Allow` header of a route (a 405 must name the methods the path takes). Pure. */
function allowed(route: Route): string {
  return [
    ...(route.methods.GET ? ['GET', 'HEAD'] : []),
    ...(route.methods.POST ? ['POST'] : []),
  ].join(', ');
}

/**
 * A request target's path exactly as sent (the absolute form's too; cut at `?`) and its query.
 * Routes match the raw path: a URL reader would take `//x` for a host and resolve `/x/../`,
 * `%2e%2e` and backslashes, answering `/api/...` for paths a proxy's rule for `/api/` does not
 * see as such. Pure.
 */
export function requestTarget(target: string): { path: string; query: URLSearchParams } {
  const { path: full } = originForm(target);
  const cut = full.indexOf('?');
  const path = cut === -1 ? full : full.slice(0, cut);
  return { path, query: new URLSearchParams(cut === -1 ? '' : full.slice(cut + 1)) };
}

/** Start the admin listener. */
export async function startAdmin(settings: AdminSettings, deps: AdminDeps): Promise<AdminListener> {
  const guard = createGuard(settings.token);
  const api = createApi(deps, {
    maxBodyBytes: settings.maxBodyBytes,
    bodyTimeoutMs: settings.bodyTimeoutMs ?? 10_000,
  });
  const assets = consoleAssets();
  const routes: Route[] = [
    {
      // Behind the token like everything with an answer of its own (probes can send a header).
      path: /^\/healthz$/,
      methods: { GET: ({ res }) => sendJson(res, 200, { status: 'ok' }) },
    },
    {
      path: /^\/readyz$/,
      methods: {
        GET: async ({ res }) => {
          const readiness = await deps.readiness();
          sendJson(res, readiness.ready ? 200 : 503, readiness);
        },
      },
    },
    {
      path: /^\/metrics$/,
      methods: {
        GET: async ({ res }) => {
          if (!deps.metrics) throw new AdminError('not_found', 'metrics are not enabled');
          sendBody(res, 200, deps.metrics.contentType, await deps.metrics.render());
        },
      },
    },
    { path: /^\/$/, open: true, methods: { GET: ({ res }) => assets.send(res, 'page') } },
    { path: /^\/console\.js$/, open: true, methods: { GET: ({ res }) => assets.send(res, 'js') } },
    {
      path: /^\/console\.css$/,
      open: true,
      methods: { GET: ({ res }) => assets.send(res, 'css') },
    },
    { path: /^\/icon\.svg$/, open: true, methods: { GET: ({ res }) => assets.send(res, 'icon') } },
    { path: /^\/api\/info$/, methods: { GET: api.info } },
    { path: /^\/api\/requests$/, methods: { GET: api.list } },
    { path: /^\/api\/stream$/, methods: { GET: api.stream } },
    { path: new RegExp(`^/api/requests/${ID}$`), methods: { GET: api.detail } },
    { path: new RegExp(`^/api/requests/${ID}/replay$`), methods: { POST: api.replay } },
    { path: new RegExp(`^/api/runs/${ID}/retry$`), methods: { POST: api.retry } },
    { path: /^\/api\/playground$/, methods: { POST: api.playground } },
  ];

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const framing = framingRefusal(req) ?? contentCodingRefusal(req.headers['content-encoding']);
    // Every framing code is one of the admin catalogue's (checked by the compiler).
    if (framing) throw new AdminError(framing.code);
    // Only the path is read, as sent (the absolute form's path): a query string never selects a
    // route, nor does `//x/api/...`, which a URL relative to a base reads as the host `x`.
    const { path, query } = requestTarget(req.url ?? '/');
    const route = routes.find((r) => r.path.test(path));
    const method = req.method ?? 'GET';
    const refused = guard({
      method,
      host: req.headers.host,
      origin: req.headers.origin,
      authorization: req.headers.authorization,
      fetchSite: [req.headers['sec-fetch-site']].flat()[0],
      needsToken: route?.open !== true,
    });
    if (refused) {
      // Counted, not locked out: a lock would let whoever reaches the port keep the operator out.
      if (adminRefused.hasSubscribers) adminRefused.publish({ code: refused });
      throw new AdminError(refused);
    }
    if (!route) throw new AdminError('not_found');
    const handler = handlerFor(route, method);
    if (!handler) throw new AdminError('method_not_allowed', undefined, { allow: allowed(route) });
    // A cross-site form cannot send JSON (that needs a preflight this listener never grants).
    if (method === 'POST' && !JSON_TYPE.test(req.headers['content-type'] ?? '')) {
      throw new AdminError('unsupported_media_type');
    }
    const params = (route.path.exec(path) ?? []).slice(1);
    await handler({ req, res, query, params });
  }

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    owesAnswer(req, res);
    handle(req, res).catch((err: unknown) => {
      const error = err instanceof AdminError ? err : new AdminError('internal');
      if (!(err instanceof AdminError)) settings.logger.error({ err }, 'admin request failed');
      if (res.headersSent) {
        res.destroy();
        return;
      }
      // A refused body is not read: close rather than wait for it.
      if (!req.complete) res.setHeader('connection', 'close');
      sendAdminError(res, error);
    });
  };
  const server = createServer(
    // A missing Host is refused as JSON by handle, not by Node's parser with an empty 400.
    { requestTimeout: 30_000, headersTimeout: 10_000, requireHostHeader: false },
    onRequest,
  );
  // Node would answer any other expectation 417 with an empty body; handle refuses it as JSON.
  server.on('checkExpectation', onRequest);
  // What the parser refuses (headers past its limit, a line it cannot read) is answered as JSON
  // with the hook listener's codes, in order with the answers the connection still owes, and
  // with the headers of every admin answer (never cached, never sniffed).
  server.on('clientError', (err: NodeJS.ErrnoException, socket) =>
    refuseMessage(socket, err.code, () => undefined, COMMON_HEADERS),
  );
  server.maxHeadersCount = 100;
  capConnections(server, settings.caps);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.port, settings.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}`,
    close() {
      closing ??= new Promise<void>((resolve) => {
        api.closeStreams();
        server.close(() => resolve());
        server.closeIdleConnections();
        // Requests still running get a moment; a keep-alive client does not hold shutdown.
        setTimeout(() => server.closeAllConnections(), 2_000).unref();
      });
      return closing;
    },
  };
}

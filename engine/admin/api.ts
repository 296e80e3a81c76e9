/**
 * The console's API under /api: the journal's requests (list, detail, live
 * stream), retrying a run, replaying a kept request and the playground,
 * both as dry runs through the current config. Every answer is JSON built
 * from the journal's bounded records; no token, signature or secret is in them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { parseJsonObject, readBody } from '../body.ts';
import type { DryRunRequest } from '../ingress/dry-run.ts';
import { AdminError } from './admin-errors.ts';
import type { AdminDeps, RunView } from './deps.ts';
import type { JournalRecord } from './journal-record.ts';
import { sendJson, startStream } from './reply.ts';
import { detail, matches, type RequestFilter, readListQuery, summary } from './views.ts';

export type ApiSettings = {
  /** Bound of a playground payload: hooks.maxBodyBytes, as the configuration now in force has it. */
  maxBodyBytes: () => number;
  bodyTimeoutMs: number;
};

export type ApiContext = {
  req: IncomingMessage;
  res: ServerResponse;
  /** The target's query string, parsed. */
  query: URLSearchParams;
  params: string[];
};

// Records whose run states are read at once under a state filter (up to 64 actions each).
const STATE_PAGE = 100;
const MAX_HEADERS = 64;
// A slow stream reader is dropped past this much unsent data.
const STREAM_BACKLOG = 1024 * 1024;
const HEARTBEAT_MS = 15_000;

/** The API's handlers, over the admin dependencies. */
export function createApi(deps: AdminDeps, settings: ApiSettings) {
  const streams = new Set<ServerResponse>();
  // Each batch as event lines, made once for every stream (each gets the same array).
  const eventText = new WeakMap<readonly JournalRecord[], string>();
  function events(batch: readonly JournalRecord[]): string {
    let text = eventText.get(batch);
    if (text === undefined) {
      text = '';
      for (const entry of batch) text += `data: ${JSON.stringify(summary(entry))}\n\n`;
      eventText.set(batch, text);
    }
    return text;
  }
  /** The runs of a request's actions, by action id (none while the runtime is off). */
  async function runsOf(record: JournalRecord): Promise<Map<string, RunView | undefined>> {
    const runs = new Map<string, RunView | undefined>();
    for (const { id } of record.actions) runs.set(id, await deps.runs?.get(id));
    return runs;
  }

  /**
   * The run states a state filter needs for a page of records: one read per page, only until
   * the limit is met, and the event loop given back after it (the embedded store reads
   * synchronously: a journal of fanned-out requests is 640,000 ids, half a second at once).
   */
  async function statesOf(
    page: readonly JournalRecord[],
    filter: RequestFilter,
  ): Promise<ReadonlyMap<string, string>> {
    if (filter.state === undefined || !deps.runs) return new Map();
    const ids = page.flatMap((entry) => entry.actions.map((a) => a.id));
    const states = await deps.runs.states(ids);
    await nextTurn();
    return states;
  }

  function record(id: string | undefined): JournalRecord {
    const found = id === undefined ? undefined : deps.journal.get(id);
    if (!found) throw new AdminError('not_found', 'no such request in the journal');
    return found;
  }

  async function jsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
    // JSON escaping can double a payload; the dry run bounds the payload itself.
    const maxBytes = settings.maxBodyBytes() * 2 + 65_536;
    try {
      const raw = await readBody(req, { maxBytes, timeoutMs: settings.bodyTimeoutMs });
      return parseJsonObject(raw, 64);
    } catch (err) {
      const code = (err as { code?: string }).code;
      // bad_request: the HTTP parser refused the rest of the body (parser-refusals.ts broke the read).
      if (
        code === 'payload_too_large' ||
        code === 'request_timeout' ||
        code === 'body_too_fragmented' ||
        code === 'bad_request'
      )
        throw new AdminError(code);
      throw new AdminError('invalid_json');
    }
  }

  return {
    info({ res }: ApiContext) {
      sendJson(res, 200, {
        keepPayloads: deps.journal.keepPayloads,
        runtime: deps.runs !== undefined,
        signing: deps.signFor !== undefined,
        maxBodyBytes: settings.maxBodyBytes(),
      });
    },

    async list({ res, query: params }: ApiContext) {
      const query = readListQuery(params);
      if ('refused' in query) throw new AdminError('invalid_query', query.refused);
      const { filter, limit } = query;
      const entries = deps.journal.list();
      const requests = [];
      for (let at = 0; at < entries.length && requests.length < limit; at += STATE_PAGE) {
        const page = entries.slice(at, at + STATE_PAGE);
        const states = await statesOf(page, filter);
        for (const entry of page) {
          if (requests.length >= limit) break;
          if (matches(entry, filter, (id) => states.get(id))) requests.push(summary(entry));
        }
      }
      sendJson(res, 200, { requests });
    },

    async detail({ res, params }: ApiContext) {
      const found = record(params[0]);
      const runs = await runsOf(found);
      sendJson(res, 200, { request: detail(found, (id) => runs.get(id)) });
    },

    stream({ req, res }: ApiContext) {
      // A HEAD gets the stream's headers and ends: it would hold a stream it never reads.
      if (req.method === 'HEAD') {
        startStream(res);
        res.end();
        return;
      }
      let heartbeat: NodeJS.Timeout | undefined;
      // A batch of requests in one write (the journal batches them: a flood is one write per
      // interval, not one per request).
      const unsubscribe = deps.journal.subscribe((batch) => {
        if (res.writableLength > STREAM_BACKLOG) return res.destroy();
        send(res, events(batch));
      });
      if (!unsubscribe) throw new AdminError('too_many_streams');
      streams.add(res);
      startStream(res);
      heartbeat = setInterval(() => send(res, ': ping\n\n'), HEARTBEAT_MS);
      heartbeat.unref();
      const end = () => {
        clearInterval(heartbeat);
        heartbeat = undefined;
        unsubscribe();
        streams.delete(res);
      };
      req.once('close', end);
      res.once('close', end);
    },

    async retry({ res, params }: ApiContext) {
      if (!deps.runs) throw new AdminError('runtime_off');
      const outcome = await deps.runs.retry(params[0] ?? '');
      if (!outcome.ok) throw new AdminError(outcome.refusal, outcome.reason);
      sendJson(res, 200, { ok: true, run: (await deps.runs.get(params[0] ?? '')) ?? null });
    },

    async replay({ res, params }: ApiContext) {
      const entry = record(params[0]);
      const kept = entry.payload;
      if (!kept) {
        // Payloads were kept, but this one was answered before its body was read: nothing to replay.
        throw new AdminError(
          'payload_not_kept',
          entry.bodyUnread ? 'it was answered before its body was read' : undefined,
        );
      }
      const headers = { ...kept.headers };
      // Signature headers are never kept: a signed route's body is signed again, as its sender would.
      const note = sign(entry.hook, kept.body, headers, true);
      const result = await deps.dryRun({
        hook: entry.hook,
        method: entry.method,
        body: kept.body,
        headers,
        query: kept.query,
      });
      sendJson(res, 200, { result, ...(note && { note }) });
    },

    async playground({ req, res }: ApiContext) {
      const input = await jsonBody(req);
      const request = playgroundRequest(input);
      const note =
        input['sign'] === true
          ? sign(request.hook, request.body, request.headers, true)
          : undefined;
      const result = await deps.dryRun(request);
      sendJson(res, 200, { result, ...(note && { note }) });
    },

    /** End the live streams (the listener is closing). */
    closeStreams() {
      for (const res of streams) res.end();
      streams.clear();
    },
  };

  // Adds the sender's signature headers; returns why it could not, when it was wanted.
  function sign(
    hook: string,
    body: Buffer,
    headers: Record<string, string>,
    wanted: boolean,
  ): string | undefined {
    if (!wanted) return undefined;
    if (!deps.signFor) return 'signing is not available; the request was sent unsigned';
    const signed = deps.signFor(hook, body, headers);
    if (typeof signed === 'string') return `not signed: ${signed}`;
    Object.assign(headers, signed);
    return undefined;
  }
}

/** The playground's form as a dry-run request (invalid_json when it is not of that shape). */
export function playgroundRequest(input: Record<string, unknown>): DryRunRequest & {
  headers: Record<string, string>;
} {
  const { hook, payload, headers, query } = input;
  if (typeof hook !== 'string' || hook === '' || hook.length > 256)
    throw new AdminError('invalid_json', 'hook must be a non-empty string');
  if (typeof payload !== 'string') throw new AdminError('invalid_json', 'payload must be a string');
  if (query !== undefined && typeof query !== 'string')
    throw new AdminError('invalid_json', 'query must be a string');
  const clean: Record<string, string> = Object.create(null);
  if (headers !== undefined) {
    if (typeof headers !== 'object' || headers === null || Array.isArray(headers))
      throw new AdminError('invalid_json', 'headers must be an object of strings');
    const entries = Object.entries(headers);
    if (entries.length > MAX_HEADERS) throw new AdminError('invalid_json', 'too many headers');
    for (const [name, value] of entries) {
      if (typeof value !== 'string')
        throw new AdminError('invalid_json', 'header values must be strings');
      clean[name.toLowerCase()] = value;
    }
  }
  if (clean['content-type'] === undefined) clean['content-type'] = 'application/json';
  return { hook, body: Buffer.from(payload, 'utf8'), headers: clean, query: query ?? '' };
}

// A stream ended (the listener closing) but not yet closed gets nothing more written.
function send(res: ServerResponse, text: string): void {
  if (!res.writableEnded && !res.destroyed) res.write(text);
}

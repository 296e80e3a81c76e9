/**
 * What the console's API answers about journal records: a summary for the
 * list, the detail with each action's run, and the list's filters. Pure.
 */
import { ACTION_STATES, type ActionState } from '../queue/action-store.ts';
import type { RunView } from './deps.ts';
import type { JournalRecord } from './journal-record.ts';

export type RequestSummary = Pick<
  JournalRecord,
  | 'id'
  | 'time'
  | 'method'
  | 'hook'
  | 'route'
  | 'status'
  | 'code'
  | 'authenticated'
  | 'mappingId'
  | 'durationMs'
  | 'replayed'
> & {
  deliveryId?: string;
  sessions: string[];
  actionIds: string[];
  kept: boolean;
};

export type RequestFilter = {
  route?: string;
  /** An exact status (`401`) or a class (`4xx`). */
  status?: string;
  session?: string;
  state?: string;
  /** A request id, an action id or a delivery id. */
  q?: string;
  /** Only requests whose caller was authenticated (`true`), or only those answered before (`false`). */
  authenticated?: string;
};

/** A record as the list shows it. */
export function summary(record: JournalRecord): RequestSummary {
  const deliveryId = record.verification?.deliveryId;
  return {
    id: record.id,
    time: record.time,
    method: record.method,
    hook: record.hook,
    ...(record.route !== undefined && { route: record.route }),
    status: record.status,
    ...(record.code !== undefined && { code: record.code }),
    authenticated: record.authenticated,
    ...(record.mappingId !== undefined && { mappingId: record.mappingId }),
    durationMs: record.durationMs,
    replayed: record.replayed,
    ...(deliveryId !== undefined && { deliveryId }),
    sessions: record.actions.flatMap((a) => (a.sessionKey === undefined ? [] : [a.sessionKey])),
    actionIds: record.actions.map((a) => a.id),
    kept: record.payload !== undefined,
  };
}

/** A record with its body as text (when kept) and each action's run. */
export function detail(
  record: JournalRecord,
  runOf: (actionId: string) => RunView | undefined,
): Record<string, unknown> {
  const { payload, ...rest } = record;
  return {
    ...rest,
    ...(payload && {
      payload: {
        body: payload.body.toString('utf8'),
        truncated: payload.truncated,
        headers: payload.headers,
        query: payload.query,
      },
    }),
    runs: Object.fromEntries(record.actions.map((a) => [a.id, runOf(a.id) ?? null])),
  };
}

/** A list request's query: its filter and how many records at most. */
export type ListQuery = { filter: RequestFilter; limit: number };

/** The most records a list answers, and how many when no limit is given. */
export const LIST_LIMIT = 1000;

const FILTER_KEYS = ['route', 'status', 'session', 'state', 'q', 'authenticated'] as const;
// An exact status (`401`) or a class (`4xx`): anything else would match nothing, silently.
const STATUS = /^[1-5]([0-9]{2}|xx)$/i;

/**
 * A list request's query string read (unknown keys ignored, values bounded), or why it is
 * refused: a key given twice, a limit that is not a positive integer, a status, a run state or
 * an `authenticated` no record can have. An empty or blank filter is not set. Pure.
 */
export function readListQuery(params: URLSearchParams): ListQuery | { refused: string } {
  for (const key of [...FILTER_KEYS, 'limit'] as const) {
    if (params.getAll(key).length > 1) return { refused: `${key} is given more than once` };
  }
  const filter: RequestFilter = {};
  for (const key of FILTER_KEYS) {
    const value = params.get(key)?.trim().slice(0, 256);
    if (value) filter[key] = value;
  }
  if (filter.status !== undefined && !STATUS.test(filter.status))
    return { refused: 'status must be a status such as 401 or a class such as 4xx' };
  if (filter.state !== undefined && !ACTION_STATES.includes(filter.state as ActionState))
    return { refused: `state must be one of ${ACTION_STATES.join(', ')}` };
  if (filter.authenticated !== undefined && !/^(true|false)$/.test(filter.authenticated))
    return { refused: 'authenticated must be true or false' };
  const raw = params.get('limit');
  if (raw === null) return { filter, limit: LIST_LIMIT };
  // Digits only: Number() also takes 1e3, 0x2, 1.5 and blanks.
  if (!/^[1-9][0-9]*$/.test(raw)) return { refused: 'limit must be a positive integer' };
  return { filter, limit: Math.min(Number(raw), LIST_LIMIT) };
}

/** True when a record passes every filter that is set. */
export function matches(
  record: JournalRecord,
  filter: RequestFilter,
  stateOf: (actionId: string) => string | undefined,
): boolean {
  if (filter.route !== undefined && record.hook !== filter.route && record.route !== filter.route)
    return false;
  if (
    filter.authenticated !== undefined &&
    record.authenticated !== (filter.authenticated === 'true')
  )
    return false;
  if (filter.status !== undefined && !statusMatches(record.status, filter.status)) return false;
  if (
    filter.session !== undefined &&
    !record.actions.some((a) => a.sessionKey?.includes(filter.session as string))
  )
    return false;
  if (filter.q !== undefined) {
    const q = filter.q;
    const found =
      record.id === q ||
      record.verification?.deliveryId === q ||
      record.actions.some((a) => a.id === q);
    if (!found) return false;
  }
  if (filter.state !== undefined && !record.actions.some((a) => stateOf(a.id) === filter.state))
    return false;
  return true;
}

function statusMatches(status: number, wanted: string): boolean {
  const range = /^([1-5])xx$/i.exec(wanted);
  if (range) return Math.floor(status / 100) === Number(range[1]);
  return String(status) === wanted;
}

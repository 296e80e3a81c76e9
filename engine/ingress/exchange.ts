/**
 * One request on its way through the stages: what the request brought, and
 * what each stage found out, in the order the stages run. A stage reads the
 * fields earlier stages set and sets its own; it answers early by returning
 * an Answer, and refuses by returning a HookError (or throwing one, from a
 * helper deeper down). A returned refusal is the cheap one: V8 computes a
 * location and message for each throw under node's callbacks, and walks the
 * frames to the handler, which cost a 401 about a tenth of its CPU.
 */
import { randomUUID } from 'node:crypto';
import type { Accepted } from '../actions.ts';
import type { HeaderValues } from '../auth/verifier.ts';
import type { KeyClaim } from '../dispatcher.ts';
import type { BodyFormat } from './content-types.ts';
import type { Selection } from '../rules.ts';
import type { Envelope, Verification } from '../envelope.ts';
import type { HookError } from '../errors.ts';
import { stageTimed } from '../observe/events.ts';
import type { RequestSource } from './request-source.ts';
import type { CompiledRoute } from './routes.ts';

export type Exchange = {
  readonly id: string;
  readonly arrivedAtMs: number;
  readonly source: RequestSource;
  readonly headers: HeaderValues;
  // admit
  pathname: string;
  query: string;
  hook: string;
  client: string;
  limiterKey: string;
  // pick route
  route?: CompiledRoute;
  // authenticate
  verification?: Verification;
  /** Unsigned, but small enough to be read as Slack's SSL check (slack-probe.ts). */
  unsignedProbe?: true;
  /** The query holds the hook token (admit.ts): never logged, kept or read (normalise.ts). */
  queryHoldsToken?: true;
  // body, parse
  format?: BodyFormat;
  raw?: Buffer;
  payload?: Record<string, unknown>;
  // normalise
  envelope?: Envelope;
  // replay check
  claims?: KeyClaim[];
  // accept
  selection?: Selection;
  accepted?: Accepted;
  /** Fields of the request's log line that stages add (never payload text or secrets). */
  log: Record<string, unknown>;
  /** A dry run (`hookgate test`, the console): nothing about it is published as traffic. */
  preview?: true;
  /** Run once the request is answered, whatever happened (releases a held key). */
  cleanup: Array<() => void>;
  /** Milliseconds per stage run, only when the runner was asked to record them (debug log). */
  timings?: Partial<Record<StageName, number>>;
};

/** A request's exchange before the first stage: what it brought, nothing found out yet. */
export function newExchange(source: RequestSource, headers: HeaderValues): Exchange {
  return {
    id: randomUUID(),
    arrivedAtMs: Date.now(),
    source,
    headers,
    pathname: '',
    query: '',
    hook: '',
    client: '',
    limiterKey: '',
    log: {},
    cleanup: [],
  };
}

/** What a stage answers with when the request is settled before the last stage. */
export type Answer =
  | { kind: 'json'; status: number; body: string; replayed?: boolean }
  | { kind: 'empty'; status: 204 }
  | { kind: 'text'; status: 200; body: string };

/** How the stages settle a request: an answer, or the refusal a stage returned. */
export type Outcome = Answer | HookError;

/** A stage: settles the request (an Outcome) or passes it on (undefined); may also throw a HookError. */
export type Stage = (exchange: Exchange) => Outcome | undefined | Promise<Outcome | undefined>;

/** The stable names of the stages (what timings and metrics are labelled with). */
export type StageName =
  | 'admit'
  | 'pickRoute'
  | 'subscribe'
  | 'authenticateHeaders'
  | 'readBody'
  | 'authenticateBody'
  | 'parse'
  | 'slackHandshake'
  | 'normalise'
  | 'replayCheck'
  | 'accept'
  | 'commit';

/** A stage and its name. */
export type NamedStage = { readonly name: StageName; readonly run: Stage };

/**
 * Run the stages in order until one answers or refuses. The outcome comes back as a value
 * while every stage so far was synchronous (a refusal before the body is answered in the
 * request's own callback, with no promise), and as a promise from the first stage that waits;
 * a thrown refusal is thrown, or rejects the promise. Stage timings are taken only when someone
 * listens on `stageTimed` or `recordTimings` is set (the debug log): otherwise no clock is read.
 */
export function runStages(
  stages: readonly NamedStage[],
  exchange: Exchange,
  recordTimings = false,
): Outcome | Promise<Outcome> {
  if (recordTimings || (stageTimed.hasSubscribers && !exchange.preview))
    return runTimed(stages, exchange, recordTimings);
  return runPlain(stages, exchange, 0);
}

function runPlain(
  stages: readonly NamedStage[],
  exchange: Exchange,
  from: number,
): Outcome | Promise<Outcome> {
  for (let i = from; i < stages.length; i++) {
    const step = (stages[i] as NamedStage).run(exchange);
    if (step instanceof Promise)
      return step.then((answer) => answer ?? runPlain(stages, exchange, i + 1));
    if (step) return step;
  }
  throw new Error('the stages ended without an answer');
}

async function runTimed(
  stages: readonly NamedStage[],
  x: Exchange,
  record: boolean,
): Promise<Outcome> {
  const timings: Partial<Record<StageName, number>> | undefined = record ? {} : undefined;
  if (timings) x.timings = timings;
  for (const stage of stages) {
    const started = performance.now();
    let answer: Outcome | undefined;
    try {
      const step = stage.run(x);
      answer = step instanceof Promise ? await step : step;
    } finally {
      // A stage that refused (threw) is timed too: a slow 401 is worth seeing.
      const ms = performance.now() - started;
      if (timings) timings[stage.name] = Math.round(ms * 1000) / 1000;
      if (stageTimed.hasSubscribers && !x.preview)
        stageTimed.publish({ stage: stage.name, route: x.route?.name, ms });
    }
    if (answer) return answer;
  }
  throw new Error('the stages ended without an answer');
}

/** A field an earlier stage must have set (a missing one is a bug in the stage list). */
export function had<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`stage order: ${what} is not set yet`);
  return value;
}

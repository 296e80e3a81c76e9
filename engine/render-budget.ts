/**
 * The bounds of rendering one mapped request: every rendered field, every
 * rendered action and all actions of the request together, plus a bound on
 * the work templates may do (bytes produced by values and helpers, loop
 * iterations). Templates charge the budget WHILE they render, so a hostile
 * payload stops a render at the bound instead of building a huge string first.
 */

/** Byte bounds of rendered output (hooks.maxRendered*Bytes). */
export type RenderLimits = {
  readonly fieldBytes: number;
  readonly actionBytes: number;
  readonly requestBytes: number;
};

/** Defaults of the settings, in the order of hooks.maxBodyBytes. */
export const DEFAULT_RENDER_LIMITS: RenderLimits = Object.freeze({
  fieldBytes: 262_144,
  actionBytes: 262_144,
  requestBytes: 1_048_576,
});

/** Work allowed per request, as a multiple of the request's output bound. */
export const WORK_FACTOR = 4;

// An iteration that prints nothing still costs: a loop nested in a loop over the same
// array must stop long before n² empty iterations.
const ITERATION_COST = 256;

/** Which bound was hit. */
export type RenderLimit = 'field' | 'action' | 'request' | 'work';

/** The setting a user raises for each bound. */
export const LIMIT_SETTINGS: Readonly<Record<RenderLimit, string>> = Object.freeze({
  field: 'hooks.maxRenderedFieldBytes',
  action: 'hooks.maxRenderedActionBytes',
  request: 'hooks.maxRenderedRequestBytes',
  work: 'hooks.maxRenderedRequestBytes',
});

/** Thrown by templates and the budget; the mapped route turns it into 400 rendered_too_large. */
export class RenderLimitError extends Error {
  readonly limit: RenderLimit;
  readonly max: number;
  constructor(limit: RenderLimit, max: number) {
    super(`rendering exceeds ${max} (${LIMIT_SETTINGS[limit]})`);
    this.name = 'RenderLimitError';
    this.limit = limit;
    this.max = max;
  }
}

/** The running account of one request's rendering. */
export class RenderBudget {
  readonly limits: RenderLimits;
  private fieldChars = 0;
  private actionBytes = 0;
  private requestBytes = 0;
  private work = 0;
  private readonly maxWork: number;

  constructor(limits: RenderLimits = DEFAULT_RENDER_LIMITS) {
    this.limits = limits;
    this.maxWork = WORK_FACTOR * limits.requestBytes;
  }

  /** A new field starts rendering. */
  startField(): void {
    this.fieldChars = 0;
  }

  /** A new action starts (its fields are summed against the action bound). */
  startAction(): void {
    this.actionBytes = 0;
  }

  /** A value of `length` characters goes into the current field's output. */
  output(length: number): void {
    this.fieldChars += length;
    this.spend(length);
    // Characters <= UTF-8 bytes: a cheap early stop; the exact byte check follows the render.
    if (this.fieldChars > this.limits.fieldBytes)
      throw new RenderLimitError('field', this.limits.fieldBytes);
  }

  /** A loop finished one iteration; `total` is the loop's output so far, `added` this iteration's. */
  iterate(total: number, added: number): void {
    this.spend(ITERATION_COST);
    this.grow(total, added);
  }

  /** A text being built (a join) grew by `added` characters to `total`. */
  grow(total: number, added: number): void {
    this.spend(added + 1);
    if (total > this.limits.fieldBytes) throw new RenderLimitError('field', this.limits.fieldBytes);
  }

  /** Work that produces no output directly (a helper's intermediate text, a comparison). */
  spend(units: number): void {
    this.work += units;
    if (this.work > this.maxWork) throw new RenderLimitError('work', this.maxWork);
  }

  /** A rendered field of `bytes` UTF-8 bytes joins the current action and the request. */
  account(bytes: number): void {
    const { fieldBytes, actionBytes, requestBytes } = this.limits;
    if (bytes > fieldBytes) throw new RenderLimitError('field', fieldBytes);
    this.actionBytes += bytes;
    if (this.actionBytes > actionBytes) throw new RenderLimitError('action', actionBytes);
    this.requestBytes += bytes;
    if (this.requestBytes > requestBytes) throw new RenderLimitError('request', requestBytes);
  }
}

/** The limits from the hooks settings. */
export function renderLimits(hooks: {
  maxRenderedFieldBytes: number;
  maxRenderedActionBytes: number;
  maxRenderedRequestBytes: number;
}): RenderLimits {
  return Object.freeze({
    fieldBytes: hooks.maxRenderedFieldBytes,
    actionBytes: hooks.maxRenderedActionBytes,
    requestBytes: hooks.maxRenderedRequestBytes,
  });
}

/**
 * What the benchmark runs: the servers (a raw node:http baseline and
 * hookgate in several configurations), the request each target sends, and
 * what a correct answer looks like.
 */

/** The hooks token the bench configures; the 401 target sends another one. */
export const TOKEN = 'bench-hook-token-0123456789abcdef';
const WRONG_TOKEN = 'bench-wrong-token-0123456789abcdef';

/** Size of every request body, as in the FACTS.md measurements. */
export const BODY_BYTES = 221;

/** How the child process should start its server. */
export type ServerSpec =
  | { kind: 'baseline' }
  | {
      kind: 'hookgate';
      dataDir: string;
      commitDelayMs: number;
      /** A file to log to at level info; absent: the silent logger. */
      logFile?: string;
      /** hooks.authRateLimit.maxFailures; absent: the default (20). */
      maxFailures?: number;
      /** Replace the SQLite store by a non-durable in-memory one (diagnostic). */
      memoryStore?: boolean;
    };

/** How a target's hookgate differs from the default configuration. */
export type HookgateVariant = {
  commitDelayMs: number;
  logToFile?: boolean;
  maxFailures?: number;
  memoryStore?: boolean;
};

/** One benchmarked target. */
export type Target = {
  /** Key for --targets. */
  key: string;
  /** Row label. */
  label: string;
  /** undefined: the raw node:http baseline. */
  hookgate?: HookgateVariant;
  path: string;
  token: string;
  body: string;
  expectStatus: number;
};

/** A failed-auth limit no benchmark run reaches, so the 401 target stays a 401. */
export const UNREACHABLE_MAX_FAILURES = 1_000_000_000;

/** Pad the string field `field` of `fields` so the JSON body is exactly BODY_BYTES long. */
export function sizedBody(fields: Record<string, unknown>, field: string): string {
  const bare = JSON.stringify({ ...fields, [field]: '' });
  const padding = BODY_BYTES - Buffer.byteLength(bare);
  if (padding < 0) throw new Error(`body without padding is already ${bare.length} bytes`);
  return JSON.stringify({ ...fields, [field]: 'x'.repeat(padding) });
}

const WAKE_BODY = sizedBody({ text: '', mode: 'now' }, 'text');
const AGENT_BODY = sizedBody(
  { message: '', name: 'GitHub', wakeMode: 'now', deliver: false, timeoutSeconds: 120 },
  'message',
);

/**
 * Every target, in run order; `commitDelays` beyond the first add /wake rows.
 * The baseline runs first and last, so drift in machine load shows.
 */
export function allTargets(commitDelays: readonly number[]): Target[] {
  const [base = 0, ...sweep] = commitDelays;
  const wake = { path: '/hooks/wake', token: TOKEN, body: WAKE_BODY, expectStatus: 200 };
  return [
    { key: 'baseline', label: 'node:http baseline', ...wake },
    { key: 'wake', label: 'hookgate /wake', hookgate: { commitDelayMs: base }, ...wake },
    {
      key: 'agent',
      label: 'hookgate /agent',
      hookgate: { commitDelayMs: base },
      path: '/hooks/agent',
      token: TOKEN,
      body: AGENT_BODY,
      expectStatus: 200,
    },
    {
      key: 'unauthorized',
      label: 'hookgate 401 (wrong token)',
      hookgate: { commitDelayMs: base, maxFailures: UNREACHABLE_MAX_FAILURES },
      ...wake,
      token: WRONG_TOKEN,
      expectStatus: 401,
    },
    {
      key: 'wake-log',
      label: 'hookgate /wake, log info to file',
      hookgate: { commitDelayMs: base, logToFile: true },
      ...wake,
    },
    {
      key: 'wake-memory',
      label: 'hookgate /wake, in-memory store (NOT durable, diagnostic)',
      hookgate: { commitDelayMs: base, memoryStore: true },
      ...wake,
    },
    ...sweep.map((delay) => ({
      key: `wake-delay-${delay}`,
      label: `hookgate /wake, commitDelayMs ${delay}`,
      hookgate: { commitDelayMs: delay },
      ...wake,
    })),
    { key: 'baseline-again', label: 'node:http baseline again (drift check)', ...wake },
  ];
}

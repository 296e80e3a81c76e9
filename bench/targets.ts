/**
 * What the benchmark runs: the servers (a raw node:http baseline and
 * hookgate in several configurations: direct /wake and /agent, a mapped
 * hook with a condition and templates, a sandboxed transform, /wake on a
 * PostgreSQL store with one and three instances), the request
 * each target sends, what a correct answer looks like, and each target's aim.
 */

/** The hooks token the bench configures; the 401 target sends another one. */
export const TOKEN = 'bench-hook-token-0123456789abcdef';
const WRONG_TOKEN = 'bench-wrong-token-0123456789abcdef';

/** Size of every request body, as in the FACTS.md measurements. */
export const BODY_BYTES = 221;

/** How the child process should start its server. */
export type ServerSpec =
  | { kind: 'baseline' }
  /** The durable reference: node:http and one SQLite row per request, no hookgate. */
  | { kind: 'durable-reference'; dataDir: string }
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
      /** Settings merged into `hooks` (mappings, session-key prefixes). */
      hooks?: Record<string, unknown>;
      /** Files written into the transforms root before boot: relative path -> source. */
      transformFiles?: Record<string, string>;
      /** Run the runtime (action worker, heartbeat) in the server, as `hookgate serve` does. */
      runtime: boolean;
      /** Store in this PostgreSQL database (store.kind postgres) instead of SQLite in dataDir. */
      postgresUrl?: string;
      /** The agents' runner: an http runner to this URL (the bench's agent that answers at once). */
      agentUrl?: string;
    };

/** How a target's hookgate differs from the default configuration. */
export type HookgateVariant = {
  commitDelayMs: number;
  logToFile?: boolean;
  maxFailures?: number;
  memoryStore?: boolean;
  hooks?: Record<string, unknown>;
  transformFiles?: Record<string, string>;
  /** The runtime on or off for this target whatever --runtime-off says. */
  runtime?: boolean;
  /** Store on the bench's own PostgreSQL server: this many instances share one fresh database. */
  postgres?: { instances: number };
};

/** One benchmarked target. */
export type Target = {
  /** Key for --targets. */
  key: string;
  /** Row label. */
  label: string;
  /** undefined: the raw node:http baseline, or the durable reference where `reference` says so. */
  hookgate?: HookgateVariant;
  /** The durable reference server (bench/durable-reference-server.ts) instead of the baseline. */
  reference?: boolean;
  path: string;
  token: string;
  /** Request headers besides content-type and authorization. */
  headers?: Record<string, string>;
  body: string;
  /** Sign each request as GitHub does (a fresh X-GitHub-Delivery, X-Hub-Signature-256) with this secret. */
  githubSecret?: string;
  expectStatus: number;
  /** The aim: at least this fraction of the baseline's req/s, every 200 durable. */
  aim?: number;
  /** The aim for the 99th percentile latency, in ms. */
  p99AimMs?: number;
};

/** Throughput aims, as fractions of the baseline's req/s in the same run; /wake's p99 aim in ms. */
export const AIMS = {
  wake: 0.6,
  agent: 0.5,
  mapped: 0.5,
  signed: 0.45,
  transform: 0.35,
  refusal: 1.0,
  wakeP99Ms: 10,
} as const;

/** A failed-auth limit no benchmark run reaches, so the 401 target stays a 401. */
export const UNREACHABLE_MAX_FAILURES = 1_000_000_000;

/** Pad the string field `field` of `fields` so the JSON body is exactly BODY_BYTES long. */
export function sizedBody(fields: Record<string, unknown>, field: string): string {
  const bare = JSON.stringify({ ...fields, [field]: '' });
  const padding = BODY_BYTES - Buffer.byteLength(bare);
  if (padding < 0) throw new Error(`body without padding is already ${bare.length} bytes`);
  return JSON.stringify({ ...fields, [field]: 'x'.repeat(padding) });
}

export const WAKE_BODY = sizedBody({ text: '', mode: 'now' }, 'text');
export const AGENT_BODY = sizedBody(
  { message: '', name: 'GitHub', wakeMode: 'now', deliver: false, timeoutSeconds: 120 },
  'message',
);

/** The README's GitHub push mapping: a JSON-logic condition on a header, three templates. */
const GITHUB_PUSH_HOOKS = {
  allowedSessionKeyPrefixes: ['hook:'],
  mappings: [
    {
      id: 'github-push',
      match: { path: 'github', when: { '==': [{ var: 'headers.x-github-event' }, 'push'] } },
      templates: {
        message: 'Push to {{payload.repository.full_name}} by {{payload.pusher.name}}',
        sessionKey: 'hook:github:{{payload.repository.id}}',
      },
      name: 'GitHub',
    },
  ],
};

/** A GitHub-like push payload, padded in `compare`. */
const GITHUB_PUSH_BODY = sizedBody(
  {
    ref: 'refs/heads/main',
    after: '6113728f27ae82c7b1a177c8d03f9e96e0adf246',
    repository: { id: 1296269, full_name: 'octocat/Hello-World' },
    pusher: { name: 'octocat', email: 'octocat@github.com' },
    compare: '',
  },
  'compare',
);

/** The github preset's secret in the signed target. */
const GITHUB_SECRET = 'bench-github-webhook-secret';

/** An `issues` delivery as GitHub sends it, padded in the issue body. */
const GITHUB_ISSUE_BODY = sizedBody(
  {
    action: 'opened',
    issue: {
      number: 42,
      title: 'Crash on boot',
      html_url: 'https://github.com/o/r/issues/42',
      body: '',
    },
    repository: { full_name: 'octocat/Hello-World' },
    sender: { login: 'octocat' },
  },
  'body',
);

/** Transform module file name, inside the transforms root. */
const TRANSFORM_MODULE = 'bench.js';

/** The transform the transform target calls: builds the action from the payload. */
const TRANSFORM_SOURCE =
  "export default ({ payload }) => ({ message: 'Build ' + payload.build + ' ' + payload.status, name: 'CI' });\n";

const TRANSFORM_HOOKS = {
  mappings: [{ id: 'ci-build', match: { path: 'ci' }, transform: { module: TRANSFORM_MODULE } }],
};

/** A CI-like build event, padded in `log`. */
const CI_BUILD_BODY = sizedBody(
  { build: 4711, status: 'passed', pipeline: 'main', commit: 'c0ffee42', log: '' },
  'log',
);

/** The raw node:http baseline, loaded with the /wake body. */
export const BASELINE_TARGET: Target = {
  key: 'baseline',
  label: 'node:http baseline',
  path: '/hooks/wake',
  token: TOKEN,
  body: WAKE_BODY,
  expectStatus: 200,
};

/**
 * Every target, in run order; `commitDelays` beyond the first add /wake rows.
 * The baseline runs first and last, so drift in machine load shows.
 */
export function allTargets(commitDelays: readonly number[]): Target[] {
  const [base = 0, ...sweep] = commitDelays;
  const wake = { path: '/hooks/wake', token: TOKEN, body: WAKE_BODY, expectStatus: 200 };
  return [
    BASELINE_TARGET,
    {
      key: 'durable-reference',
      label: 'durable reference (node:http + one SQLite row, no hookgate)',
      reference: true,
      ...wake,
    },
    {
      key: 'wake',
      label: 'hookgate /wake',
      hookgate: { commitDelayMs: base },
      ...wake,
      aim: AIMS.wake,
      p99AimMs: AIMS.wakeP99Ms,
    },
    {
      key: 'agent',
      label: 'hookgate /agent',
      hookgate: { commitDelayMs: base },
      path: '/hooks/agent',
      token: TOKEN,
      body: AGENT_BODY,
      expectStatus: 200,
      aim: AIMS.agent,
    },
    {
      key: 'mapped',
      label: 'hookgate mapped hook (condition + templates)',
      hookgate: { commitDelayMs: base, hooks: GITHUB_PUSH_HOOKS },
      path: '/hooks/github',
      token: TOKEN,
      headers: { 'x-github-event': 'push' },
      body: GITHUB_PUSH_BODY,
      expectStatus: 200,
      aim: AIMS.mapped,
    },
    {
      key: 'github-signed',
      label: 'hookgate signed GitHub delivery (github preset)',
      hookgate: {
        commitDelayMs: base,
        hooks: { presets: ['github'], github: { auth: { secret: GITHUB_SECRET } } },
      },
      path: '/hooks/github',
      token: TOKEN,
      headers: { 'x-github-event': 'issues' },
      body: GITHUB_ISSUE_BODY,
      githubSecret: GITHUB_SECRET,
      expectStatus: 200,
      aim: AIMS.signed,
    },
    {
      key: 'transform',
      label: 'hookgate transform (warm isolate)',
      hookgate: {
        commitDelayMs: base,
        hooks: TRANSFORM_HOOKS,
        transformFiles: { [TRANSFORM_MODULE]: TRANSFORM_SOURCE },
      },
      path: '/hooks/ci',
      token: TOKEN,
      body: CI_BUILD_BODY,
      expectStatus: 200,
      aim: AIMS.transform,
    },
    {
      key: 'unauthorized',
      label: 'hookgate 401 (wrong token)',
      hookgate: { commitDelayMs: base, maxFailures: UNREACHABLE_MAX_FAILURES },
      ...wake,
      token: WRONG_TOKEN,
      expectStatus: 401,
      aim: AIMS.refusal,
    },
    {
      key: 'wake-log',
      label: 'hookgate /wake, log info to file',
      hookgate: { commitDelayMs: base, logToFile: true },
      ...wake,
    },
    {
      key: 'wake-ingress',
      label: 'hookgate /wake, runtime off (acceptance only; diagnostic)',
      hookgate: { commitDelayMs: base, runtime: false },
      ...wake,
    },
    {
      key: 'wake-memory',
      label: 'hookgate /wake, in-memory store (NOT durable, diagnostic)',
      hookgate: { commitDelayMs: base, memoryStore: true },
      ...wake,
    },
    {
      key: 'wake-pg',
      label: 'hookgate /wake on PostgreSQL, 1 instance',
      hookgate: { commitDelayMs: base, postgres: { instances: 1 } },
      ...wake,
    },
    {
      key: 'wake-pg-3',
      label: 'hookgate /wake on PostgreSQL, 3 instances',
      hookgate: { commitDelayMs: base, postgres: { instances: 3 } },
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

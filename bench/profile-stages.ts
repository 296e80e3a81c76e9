/**
 * Where a server's CPU went, by part of the request path: each sample of a
 * V8 CPU profile is charged to the innermost frame of the stack that belongs
 * to a known part (hookgate's own files by folder and module, Node's HTTP
 * and socket internals, the garbage collector). Idle time is left out, so
 * the shares add up to the main thread's busy time, which includes waiting
 * inside a synchronous call (the COMMIT's fsync counts as the store's).
 * `npm run bench -- --profile` prints this for every hookgate target.
 */
import { type ProfileNode, readProfile } from './cpu-profile.ts';

/** A part of the path and the files (or native frames) whose samples it gets. */
type Part = { name: string; matches: (url: string, name: string) => boolean };

const inEngine = (...files: string[]) => {
  const pattern = new RegExp(`/engine/(${files.join('|')})`);
  return (url: string) => pattern.test(url);
};

const acceptingStore = inEngine(
  'store/sqlite/(group-writer|action-store|key-records|schema)',
  'store/postgres/(action-store|pool)',
  'queue/',
);
// An action's row is built in stored-action.ts, whose other functions read rows back for the
// runtime: building it (storedActionJson) is acceptance's.
const ROW_SHAPES = /\/engine\/store\/stored-action\.ts/;
const ACCEPTING_ROW_SHAPES = /^storedActionJson$/;

// Innermost match wins, so a store call made by the commit stage counts as the store.
const PARTS: readonly Part[] = [
  {
    name: 'store, accepting: insert + COMMIT',
    matches: (url, name) =>
      acceptingStore(url) || (ROW_SHAPES.test(url) && ACCEPTING_ROW_SHAPES.test(name)),
  },
  {
    name: 'runtime: worker, heartbeat, runs, their store writes',
    matches: inEngine('runtime/', 'delivery/', 'store/'),
  },
  { name: 'transform: sandbox process link', matches: inEngine('sandbox/') },
  { name: 'log line (pino)', matches: (url) => /\/(engine\/log\.ts|node_modules\/pino)/.test(url) },
  {
    name: 'authenticate: token, signatures, limiter',
    matches: inEngine('auth', 'ingress/authenticate', 'rate-limit', 'presets'),
  },
  {
    name: 'read body + parse JSON',
    matches: inEngine('ingress/read-body', 'body\\.ts', 'ingress/form', 'ingress/content-types'),
  },
  {
    name: 'accept: mapping, templates, safety wrapper, action',
    matches: inEngine(
      'actions',
      'safety',
      'mapp',
      'templates',
      'conditions',
      'rules',
      'render-budget',
      'policy',
      'session-key',
      'envelope',
      'ingress/normalise',
      'validation',
      'payload-validators',
      'evaluator-data',
    ),
  },
  {
    name: 'replay check + commit stage',
    matches: inEngine('dispatcher', 'ingress/commit', 'ingress/replay', 'idempotency'),
  },
  { name: 'answer: response write', matches: inEngine('respond') },
  {
    name: 'stage list, admit, route pick, headers',
    matches: inEngine('ingress/', 'headers', 'client-address', 'connection-limit', 'reload/'),
  },
  { name: 'hookgate: other', matches: inEngine('') },
  {
    name: 'node:http + sockets (parse, write, timers)',
    matches: (url) => /^node:(_http|http|net|stream|internal\/(http|stream|timers|net))/.test(url),
  },
  { name: 'garbage collector', matches: (_url, name) => name === '(garbage collector)' },
];
const OTHER = 'other (V8, promises, microtasks, node internals)';

function partOf(node: ProfileNode, parentOf: Map<number, ProfileNode>): string {
  for (let at: ProfileNode | undefined = node; at; at = parentOf.get(at.id)) {
    const { url, functionName } = at.callFrame;
    const part = PARTS.find((candidate) => candidate.matches(url, functionName));
    if (part) return part.name;
  }
  return OTHER;
}

/** CPU per part of one profile: [part, share of the CPU used] sorted by share; idle excluded. */
export function stageShares(file: string): Array<[string, number]> {
  const { profile, self, parentOf } = readProfile(file);
  const byPart = new Map<string, number>();
  let busy = 0;
  for (const node of profile.nodes) {
    const micros = self.get(node.id) ?? 0;
    if (micros === 0 || node.callFrame.functionName === '(idle)') continue;
    busy += micros;
    const part = partOf(node, parentOf);
    byPart.set(part, (byPart.get(part) ?? 0) + micros);
  }
  return [...byPart]
    .map(([part, micros]): [string, number] => [part, busy ? micros / busy : 0])
    .sort((a, b) => b[1] - a[1]);
}

/** The breakdown as lines: each part's share of the main thread's busy time. */
export function stageLines(file: string): string[] {
  return stageShares(file).map(
    ([part, share]) => `    ${(share * 100).toFixed(1).padStart(5)}%  ${part}`,
  );
}

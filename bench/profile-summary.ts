/**
 * `node bench/profile-summary.ts FILE.cpuprofile [N]`: the top N (default
 * 25) functions of a V8 CPU profile (from `npm run bench -- --cpu-prof DIR`)
 * by self time with the callers of the heaviest, total (inclusive) time of
 * the project's own functions, and self time summed per source file /
 * package, so the main costs of a target show without a profiler UI.
 */
import { type CallFrame, type ProfileNode, readProfile } from './cpu-profile.ts';

/** A short place name: the package under node_modules, else the path from the project root. */
function placeOf(url: string): string {
  if (!url) return '(native / V8)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const rest = url.slice(modules + '/node_modules/'.length).split('/');
    return rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : (rest[0] ?? url);
  }
  if (url.startsWith('node:')) return url;
  const bench = url.search(/\/(engine|bench|schemas|presets)\//);
  return bench >= 0 ? url.slice(bench + 1) : url;
}

function table(entries: Array<[string, number]>, total: number, limit: number): string[] {
  return entries
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(
      ([name, micros]) =>
        `${((micros / total) * 100).toFixed(1).padStart(5)}%  ${(micros / 1000).toFixed(0).padStart(7)} ms  ${name}`,
    );
}

function frameName(frame: CallFrame): string {
  const place = placeOf(frame.url);
  return `${frame.functionName || '(anonymous)'}  ${place}${frame.url ? `:${frame.lineNumber + 1}` : ''}`;
}

const add = (map: Map<string, number>, key: string, micros: number) =>
  map.set(key, (map.get(key) ?? 0) + micros);

const NOT_WORK = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

/** Print the summary of one profile file. */
export function summarise(file: string, limit: number): string {
  const { profile, self, parentOf } = readProfile(file);
  const total = [...self.values()].reduce((sum, n) => sum + n, 0) || 1;
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  const callers = new Map<string, Map<string, number>>();
  const inclusive = new Map<string, number>();
  for (const node of profile.nodes) {
    const micros = self.get(node.id) ?? 0;
    if (micros === 0) continue;
    const name = frameName(node.callFrame);
    add(byFunction, name, micros);
    add(byPlace, placeOf(node.callFrame.url), micros);
    // The nearest JS caller (skipping other native frames) says where a native cost comes from.
    let parent = parentOf.get(node.id);
    while (parent && !parent.callFrame.url && parentOf.has(parent.id)) {
      parent = parentOf.get(parent.id);
    }
    if (parent) {
      const mine = callers.get(name) ?? new Map<string, number>();
      add(mine, frameName(parent.callFrame), micros);
      callers.set(name, mine);
    }
    // Inclusive time of the project's functions: each counted once per sample stack.
    const seen = new Set<string>();
    for (let at: ProfileNode | undefined = node; at; at = parentOf.get(at.id)) {
      if (!/\/(engine|bench)\//.test(at.callFrame.url)) continue;
      const own = frameName(at.callFrame);
      if (seen.has(own)) continue;
      seen.add(own);
      add(inclusive, own, micros);
    }
  }
  const heaviest = [...byFunction]
    .filter(([name]) => !NOT_WORK.has(name.split('  ')[0] ?? ''))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8);
  const callerLines = heaviest.flatMap(([name]) => [
    `${name}, called from:`,
    ...table([...(callers.get(name) ?? [])], total, 3).map((line) => `    ${line}`),
  ]);
  return [
    `${file}: ${(total / 1000).toFixed(0)} ms sampled`,
    '',
    'self time by function:',
    ...table([...byFunction], total, limit),
    '',
    'callers of the heaviest (nearest JavaScript frame):',
    ...callerLines,
    '',
    "total time of the project's own functions (callees included):",
    ...table([...inclusive], total, limit),
    '',
    'self time by file / package:',
    ...table([...byPlace], total, limit),
  ].join('\n');
}

const [file, count] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/profile-summary.ts FILE.cpuprofile [N]');
  process.exitCode = 2;
} else {
  console.log(summarise(file, Number(count ?? 25)));
}

/**
 * Reading a V8 CPU profile (`--cpu-prof`): its nodes, each node's parent,
 * and the self time of each node from the sample timeline.
 */
import { readFileSync } from 'node:fs';

export type CallFrame = { functionName: string; url: string; lineNumber: number };
export type ProfileNode = {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
};
export type Profile = {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
};

/** A profile file with its self times (µs per node id) and parent links. */
export type ReadProfile = {
  profile: Profile;
  self: Map<number, number>;
  parentOf: Map<number, ProfileNode>;
};

/** Read a .cpuprofile file. */
export function readProfile(file: string): ReadProfile {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const self = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // Each sample's time is the delta that follows it (V8's own convention in DevTools).
  for (let i = 0; i < samples.length; i++) {
    const id = samples[i] as number;
    self.set(id, (self.get(id) ?? 0) + (deltas[i + 1] ?? 0));
  }
  const parentOf = new Map<number, ProfileNode>();
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) parentOf.set(child, node);
  }
  return { profile, self, parentOf };
}

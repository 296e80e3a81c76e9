/**
 * Messages between the server and its transform process (JSON over the
 * fork IPC channel). Payloads cross as JSON strings only.
 */

/** A transform module to load: `key` names it in calls. */
export type ModuleSpec = {
  key: string;
  mappingId: string;
  root: string;
  file: string;
  exportName?: string;
};

/** Limits applied inside the transform process. */
export type SandboxLimits = {
  memoryLimitMb: number;
  cpuTimeoutMs: number;
  maxOutputBytes: number;
  recycleAfterCalls: number;
  recycleAboveHeapMb: number;
};

/** Why a call failed, as the sandbox saw it. */
export type FailureKind = 'threw' | 'timeout' | 'memory' | 'output' | 'unavailable';

export type ToSandbox =
  | { type: 'load'; modules: ModuleSpec[]; limits: SandboxLimits }
  | { type: 'call'; id: number; key: string; input: string };

export type ConsoleLine = { level: 'info' | 'warn' | 'error' | 'debug'; text: string };

export type FromSandbox =
  | { type: 'loaded'; errors: Array<{ key: string; message: string }> }
  | {
      type: 'result';
      id: number;
      /** JSON text of the returned value; absent when the function returned undefined. */
      output?: string;
      failure?: { kind: FailureKind; message: string };
      console: ConsoleLine[];
      droppedLines: number;
    }
  | { type: 'log'; key: string; level: 'info' | 'warn' | 'error'; message: string };

/**
 * The arguments of the commands that read or ask a server's store (`runs`, `events`,
 * `heartbeats`, `heartbeat now`, `retry`, `reload`): each takes its own flags and its own
 * positional arguments, nothing else. They shared one parse of every flag any of them took, so a
 * flag of another (`heartbeats --state done`) or a word too many (`runs dead`, `reload
 * other.yaml`) was silently ignored and the command ran as if it had not been given.
 * A wrong command line throws (node's parseArgs errors, or a UsageError), exit status 2.
 */
import { parseFlags } from './parse-flags.ts';
import { UsageError } from './usage-error.ts';

const STORE = { config: { type: 'string' }, 'data-dir': { type: 'string' } } as const;
const LIST = { ...STORE, json: { type: 'boolean' }, limit: { type: 'string' } } as const;

export type StoreCommandFlags = {
  config?: string;
  dataDir?: string;
  json?: boolean;
  limit?: string;
  state?: string;
  session?: string;
  failed?: boolean;
};

export type StoreCommand =
  | {
      kind: 'runs' | 'events' | 'heartbeats' | 'heartbeat-now' | 'reload';
      flags: StoreCommandFlags;
    }
  | { kind: 'requeue'; flags: StoreCommandFlags; seq: string }
  | { kind: 'retry'; flags: StoreCommandFlags; id: string };

/** The store command `command` with its arguments `args`, checked. */
export function storeCommand(command: string, args: string[]): StoreCommand {
  switch (command) {
    case 'runs':
      return {
        kind: 'runs',
        flags: only(command, args, { ...LIST, state: { type: 'string' } }, undefined).flags,
      };
    case 'heartbeats':
      return { kind: 'heartbeats', flags: only(command, args, LIST, undefined).flags };
    case 'reload':
      return { kind: 'reload', flags: only(command, args, STORE, undefined).flags };
    case 'events': {
      // The sub-word is a positional wherever it stands (`events --data-dir D requeue 7`).
      const { values, positionals } = parse(command, args, {
        ...LIST,
        session: { type: 'string' },
      });
      if (positionals[0] !== 'requeue') {
        counted(command, positionals, undefined);
        return { kind: 'events', flags: flagsOf(values) };
      }
      const listOnly = ['json', 'limit', 'session'].filter((name) => name in values);
      if (listOnly.length > 0)
        throw new UsageError(`events requeue does not take --${listOnly[0]}`);
      const [seq] = counted('events requeue', positionals.slice(1), 'the event number');
      return { kind: 'requeue', flags: flagsOf(values), seq: seq as string };
    }
    case 'heartbeat': {
      const { values, positionals } = parse(command, args, STORE);
      if (positionals[0] !== 'now') throw new UsageError('heartbeat: say "heartbeat now"');
      counted('heartbeat now', positionals.slice(1), undefined);
      return { kind: 'heartbeat-now', flags: flagsOf(values) };
    }
    case 'retry': {
      const { flags, positionals } = only(
        command,
        args,
        { ...STORE, failed: { type: 'boolean' } },
        'an action id',
      );
      return { kind: 'retry', flags, id: positionals[0] as string };
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

type Options = Record<string, { type: 'string' | 'boolean' }>;
type Values = Record<string, string | boolean | undefined>;

/** `args` parsed with exactly these options, positional arguments allowed. */
function parse(command: string, args: string[], options: Options) {
  const { values, positionals } = parseFlags(command, {
    args,
    options,
    allowPositionals: true,
    strict: true,
  });
  return { values: values as Values, positionals };
}

/**
 * `positionals`, checked to be exactly one (that thing) with `what`, else none. The message
 * names how many were given, never what: a word typed there may be anything.
 */
function counted(command: string, positionals: string[], what: string | undefined): string[] {
  const wanted = what === undefined ? 0 : 1;
  if (positionals.length < wanted) throw new UsageError(`${command}: ${what} is required`);
  if (positionals.length > wanted) {
    const takes = what === undefined ? 'no arguments' : `one argument, ${what}`;
    throw new UsageError(
      `${command} takes ${takes} besides its flags (${positionals.length} given; see hookgate help)`,
    );
  }
  return positionals;
}

/** The parsed flags as the commands read them (`--data-dir` as dataDir). */
function flagsOf(values: Values): StoreCommandFlags {
  const { 'data-dir': dataDir, ...others } = values;
  return {
    ...(others as StoreCommandFlags),
    ...(dataDir !== undefined && { dataDir: dataDir as string }),
  };
}

/** `args` parsed with exactly these options and, with `what`, exactly one positional argument. */
function only(
  command: string,
  args: string[],
  options: Options,
  what: string | undefined,
): { flags: StoreCommandFlags; positionals: string[] } {
  const { values, positionals } = parse(command, args, options);
  return { flags: flagsOf(values), positionals: counted(command, positionals, what) };
}

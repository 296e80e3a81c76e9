/**
 * hookgate's entry point: the command line. It only parses arguments and
 * wires the engine; all behaviour lives under engine/.
 *
 *   node server.ts [serve] [--config FILE] [--host HOST] [--port PORT] [--data-dir DIR]
 *   node server.ts actions [--json] [--limit N] [--data-dir DIR | --config FILE]
 *   node server.ts check [--config FILE] [--strict]
 *   node server.ts schema
 *   node server.ts test <name> --payload FILE [--header K:V] [--query K=V] [--sign] [--json]
 *   node server.ts gmail <setup|status|stop> ...
 */
// First: a SIGHUP while the modules below load is held, not fatal (serve reloads once it listens).
import './engine/cli/hold-reloads-early.ts';
import { ConfigError } from './engine/config.ts';
import { UsageError } from './engine/cli/usage-error.ts';
import { parseFlags } from './engine/cli/parse-flags.ts';
import { storeCommand } from './engine/cli/store-command-args.ts';

// Each command loads only its own modules: a store view need not load the server, the
// sandbox or the Gmail client (about half a second of every command's start).
const cli = {
  check: () => import('./engine/cli/check.ts'),
  gmail: () => import('./engine/cli/gmail-commands.ts'),
  actions: () => import('./engine/cli/list-actions.ts'),
  schema: () => import('./engine/cli/schema.ts'),
  control: () => import('./engine/cli/control-commands.ts'),
  views: () => import('./engine/cli/runtime-commands.ts'),
  reload: () => import('./engine/cli/reload.ts'),
  serve: () => import('./engine/cli/serve.ts'),
  test: () => import('./engine/cli/test-request.ts'),
};

const usage = async () => `usage:
  hookgate [serve] [--config FILE] [--host HOST] [--port PORT] [--data-dir DIR]
  hookgate actions [--json] [--limit N] [--data-dir DIR | --config FILE]
  hookgate runs [--json] [--state S] [--limit N] [--data-dir DIR | --config FILE]
  hookgate events [--session KEY] [--json] [--limit N] [--data-dir DIR | --config FILE]
  hookgate events requeue <seq> [--data-dir DIR | --config FILE]
  hookgate heartbeats [--json] [--limit N] [--data-dir DIR | --config FILE]
  hookgate heartbeat now [--data-dir DIR | --config FILE]
  hookgate retry <action id> [--failed] [--data-dir DIR | --config FILE]
  hookgate reload [--data-dir DIR | --config FILE]
  hookgate check [--config FILE] [--strict]
  hookgate schema
  hookgate test <name> --payload FILE [--header K:V ...] [--query K=V ...] [--sign] [--json] [--config FILE]
${(await cli.gmail()).GMAIL_USAGE}`;

const print = (line: string) => process.stdout.write(`${line}\n`);

async function main(argv: string[]): Promise<number> {
  const command = argv[0] && !argv[0].startsWith('-') ? argv[0] : 'serve';
  const rest = command === argv[0] ? argv.slice(1) : argv;
  if (command === 'help' || rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(await usage());
    return 0;
  }
  if (command === 'serve') {
    const { values } = parseFlags(command, {
      args: rest,
      options: {
        config: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        'data-dir': { type: 'string' },
      },
    });
    const { 'data-dir': dataDir, ...others } = values;
    return (await cli.serve()).serve({ ...others, ...(dataDir !== undefined && { dataDir }) });
  }
  if (command === 'actions') {
    const { values } = parseFlags(command, {
      args: rest,
      options: {
        json: { type: 'boolean' },
        limit: { type: 'string' },
        config: { type: 'string' },
        'data-dir': { type: 'string' },
      },
    });
    const { 'data-dir': dataDir, ...others } = values;
    return (await cli.actions()).listActions(
      { ...others, ...(dataDir !== undefined && { dataDir }) },
      print,
    );
  }
  if (
    command === 'runs' ||
    command === 'events' ||
    command === 'heartbeats' ||
    command === 'heartbeat' ||
    command === 'retry' ||
    command === 'reload'
  ) {
    const asked = storeCommand(command, rest);
    const { flags } = asked;
    if (asked.kind === 'requeue')
      return (await cli.control()).requeueEvent({ ...flags, seq: asked.seq }, print);
    if (asked.kind === 'retry')
      return (await cli.control()).retry({ ...flags, id: asked.id }, print);
    if (asked.kind === 'runs') return (await cli.views()).runs(flags, print);
    if (asked.kind === 'events') return (await cli.views()).events(flags, print);
    if (asked.kind === 'heartbeats') return (await cli.views()).heartbeats(flags, print);
    if (asked.kind === 'reload') return (await cli.reload()).reload(flags, print);
    return (await cli.control()).heartbeatNow(flags, print);
  }
  if (command === 'check') {
    const { values } = parseFlags(command, {
      args: rest,
      options: { config: { type: 'string' }, strict: { type: 'boolean' } },
    });
    return (await cli.check()).check(values.config, print, { strict: values.strict === true });
  }
  if (command === 'test') {
    const { values, positionals } = parseFlags(command, {
      args: rest,
      allowPositionals: true,
      options: {
        payload: { type: 'string' },
        header: { type: 'string', multiple: true },
        query: { type: 'string', multiple: true },
        json: { type: 'boolean' },
        sign: { type: 'boolean' },
        config: { type: 'string' },
      },
    });
    const name = positionals[0];
    if (positionals.length > 1) {
      process.stderr.write(
        `hookgate test: one hook name (${positionals.length} words given)\n${await usage()}`,
      );
      return 2;
    }
    if (!name || !values.payload) {
      process.stderr.write(
        `hookgate test: a hook name and --payload FILE are required\n${await usage()}`,
      );
      return 2;
    }
    return (await cli.test()).testRequest(
      {
        name,
        payload: values.payload,
        headers: values.header ?? [],
        query: values.query ?? [],
        ...(values.json !== undefined && { json: values.json }),
        ...(values.sign !== undefined && { sign: values.sign }),
        ...(values.config !== undefined && { config: values.config }),
      },
      print,
    );
  }
  if (command === 'schema') {
    parseFlags(command, { args: rest, options: {}, strict: true });
    return (await cli.schema()).printSchema(print);
  }
  if (command === 'gmail') return (await cli.gmail()).gmailCommand(rest, print);
  process.stderr.write(`hookgate: unknown command "${command}"\n${await usage()}`);
  return 2;
}

/** Exit once stdout is drained: process.exit would drop output still queued for a slow pipe. */
function exitAfterOutput(code: number): void {
  process.exitCode = code;
  if (process.stdout.writableLength === 0) process.exit(code);
  process.stdout.once('drain', () => process.exit(code));
  process.stdout.once('error', () => process.exit(code));
}

const USAGE_ERRORS: ReadonlySet<string> = new Set([
  'ERR_PARSE_ARGS_UNKNOWN_OPTION',
  'ERR_PARSE_ARGS_INVALID_OPTION_VALUE',
  'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL',
]);

main(process.argv.slice(2)).then(
  (code) => exitAfterOutput(code),
  async (err: unknown) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`hookgate: config error: ${err.message}\n`);
      process.exit(2);
    }
    if (err instanceof UsageError) {
      process.stderr.write(`hookgate: ${err.message}\n`);
      process.exit(2);
    }
    // A flag the command does not take, or given without its value (`--limit -1` reads as one):
    // a usage error, as a value a command refuses is.
    if (USAGE_ERRORS.has((err as { code?: string }).code ?? '')) {
      // Node's first sentence names the option; the advice after it (quote it after `--`) is
      // about positional arguments, which these commands do not take that way.
      const [first] = (err as Error).message.split('. ');
      process.stderr.write(
        `hookgate: ${first}${first?.endsWith('.') ? '' : '.'}\n${await usage()}`,
      );
      process.exit(2);
    }
    process.stderr.write(`hookgate: ${(err as Error).message}\n`);
    process.exit(1);
  },
);

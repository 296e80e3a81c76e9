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
import { parseArgs } from 'node:util';
import { check } from './engine/cli/check.ts';
import { GMAIL_USAGE, gmailCommand } from './engine/cli/gmail-commands.ts';
import { listActions } from './engine/cli/list-actions.ts';
import { printSchema } from './engine/cli/schema.ts';
import { heartbeatNow, retry } from './engine/cli/control-commands.ts';
import { events, heartbeats, runs } from './engine/cli/runtime-commands.ts';
import { reload } from './engine/cli/reload.ts';
import { serve } from './engine/cli/serve.ts';
import { testRequest } from './engine/cli/test-request.ts';
import { ConfigError } from './engine/config.ts';

const USAGE = `usage:
  hookgate [serve] [--config FILE] [--host HOST] [--port PORT] [--data-dir DIR]
  hookgate actions [--json] [--limit N] [--data-dir DIR | --config FILE]
  hookgate runs [--json] [--state S] [--limit N] [--data-dir DIR | --config FILE]
  hookgate events [--session KEY] [--json] [--limit N] [--data-dir DIR | --config FILE]
  hookgate heartbeats [--json] [--limit N] [--data-dir DIR | --config FILE]
  hookgate heartbeat now [--data-dir DIR | --config FILE]
  hookgate retry <action id> [--failed] [--data-dir DIR | --config FILE]
  hookgate reload [--data-dir DIR | --config FILE]
  hookgate check [--config FILE] [--strict]
  hookgate schema
  hookgate test <name> --payload FILE [--header K:V ...] [--query K=V ...] [--sign] [--json] [--config FILE]
${GMAIL_USAGE}`;

const print = (line: string) => process.stdout.write(`${line}\n`);

async function main(argv: string[]): Promise<number> {
  const command = argv[0] && !argv[0].startsWith('-') ? argv[0] : 'serve';
  const rest = command === argv[0] ? argv.slice(1) : argv;
  if (command === 'help' || rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (command === 'serve') {
    const { values } = parseArgs({
      args: rest,
      options: {
        config: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        'data-dir': { type: 'string' },
      },
    });
    const { 'data-dir': dataDir, ...others } = values;
    return serve({ ...others, ...(dataDir !== undefined && { dataDir }) });
  }
  if (command === 'actions') {
    const { values } = parseArgs({
      args: rest,
      options: {
        json: { type: 'boolean' },
        limit: { type: 'string' },
        config: { type: 'string' },
        'data-dir': { type: 'string' },
      },
    });
    const { 'data-dir': dataDir, ...others } = values;
    return listActions({ ...others, ...(dataDir !== undefined && { dataDir }) }, print);
  }
  if (
    command === 'runs' ||
    command === 'events' ||
    command === 'heartbeats' ||
    command === 'heartbeat' ||
    command === 'retry' ||
    command === 'reload'
  ) {
    const { values, positionals } = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        json: { type: 'boolean' },
        limit: { type: 'string' },
        state: { type: 'string' },
        session: { type: 'string' },
        failed: { type: 'boolean' },
        config: { type: 'string' },
        'data-dir': { type: 'string' },
      },
    });
    const { 'data-dir': dataDir, ...others } = values;
    const flags = { ...others, ...(dataDir !== undefined && { dataDir }) };
    if (command === 'runs') return runs(flags, print);
    if (command === 'events') return events(flags, print);
    if (command === 'heartbeats') return heartbeats(flags, print);
    if (command === 'reload') return reload(flags, print);
    if (command === 'heartbeat') {
      if (positionals[0] !== 'now') {
        process.stderr.write(`hookgate heartbeat: say "heartbeat now"\n${USAGE}`);
        return 2;
      }
      return heartbeatNow(flags, print);
    }
    if (!positionals[0]) {
      process.stderr.write(`hookgate retry: an action id is required\n${USAGE}`);
      return 2;
    }
    return retry({ ...flags, id: positionals[0] }, print);
  }
  if (command === 'check') {
    const { values } = parseArgs({
      args: rest,
      options: { config: { type: 'string' }, strict: { type: 'boolean' } },
    });
    return check(values.config, print, { strict: values.strict === true });
  }
  if (command === 'test') {
    const { values, positionals } = parseArgs({
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
    if (!name || !values.payload) {
      process.stderr.write(`hookgate test: a hook name and --payload FILE are required\n${USAGE}`);
      return 2;
    }
    return testRequest(
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
  if (command === 'schema') return printSchema(print);
  if (command === 'gmail') return gmailCommand(rest, print);
  process.stderr.write(`hookgate: unknown command "${command}"\n${USAGE}`);
  return 2;
}

/** Exit once stdout is drained: process.exit would drop output still queued for a slow pipe. */
function exitAfterOutput(code: number): void {
  process.exitCode = code;
  if (process.stdout.writableLength === 0) process.exit(code);
  process.stdout.once('drain', () => process.exit(code));
  process.stdout.once('error', () => process.exit(code));
}

main(process.argv.slice(2)).then(
  (code) => exitAfterOutput(code),
  (err: unknown) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`hookgate: config error: ${err.message}\n`);
      process.exit(2);
    }
    if ((err as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      process.stderr.write(`hookgate: ${(err as Error).message}\n${USAGE}`);
      process.exit(2);
    }
    process.stderr.write(`hookgate: ${(err as Error).message}\n`);
    process.exit(1);
  },
);

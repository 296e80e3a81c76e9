/**
 * hookgate's entry point: the command line. It only parses arguments and
 * wires the engine; all behaviour lives under engine/.
 *
 *   node server.ts [serve] [--config FILE] [--host HOST] [--port PORT] [--data-dir DIR]
 *   node server.ts actions [--json] [--limit N] [--data-dir DIR | --config FILE]
 */
import { parseArgs } from 'node:util';
import { listActions } from './engine/cli/list-actions.ts';
import { serve } from './engine/cli/serve.ts';
import { ConfigError } from './engine/config.ts';

const USAGE = `usage:
  hookgate [serve] [--config FILE] [--host HOST] [--port PORT] [--data-dir DIR]
  hookgate actions [--json] [--limit N] [--data-dir DIR | --config FILE]
`;

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
    return listActions({ ...others, ...(dataDir !== undefined && { dataDir }) }, (line) =>
      process.stdout.write(`${line}\n`),
    );
  }
  process.stderr.write(`hookgate: unknown command "${command}"\n${USAGE}`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
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

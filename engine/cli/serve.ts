/**
 * `hookgate serve`: find and load the configuration (or the quickstart),
 * start the service, print where it listens, and stop cleanly on signals.
 */
import {
  ConfigError,
  findConfigFile,
  type LoadedConfig,
  loadConfigFile,
  quickstartConfig,
  resolveConfig,
} from '../config.ts';
import { guessableTokens } from '../audit.ts';
import { startHookgate } from '../hookgate.ts';
import { takeHeldReload } from './held-reload.ts';

export type ServeFlags = { config?: string; host?: string; port?: string; dataDir?: string };

/** Load the config named by the flags, the environment or ./hookgate.yaml; else the quickstart. */
export function loadForServe(
  flags: ServeFlags,
  env: NodeJS.ProcessEnv,
  cwd: string,
): { loaded: LoadedConfig; quickstartToken?: string } {
  const file = findConfigFile(flags.config, env, cwd);
  if (file) {
    const loaded = loadConfigFile(file, env);
    return {
      loaded: flags.dataDir ? { ...loaded, dataDir: resolveDir(cwd, flags.dataDir) } : loaded,
    };
  }
  const quick = quickstartConfig(env);
  const loaded = resolveConfig(quick.raw, {
    baseDir: cwd,
    env: null,
    ...(flags.dataDir && { dataDir: resolveDir(cwd, flags.dataDir) }),
  });
  return quick.generatedToken
    ? { loaded, quickstartToken: loaded.config.hooks.token as string }
    : { loaded };
}

/** Run the service until SIGTERM or SIGINT; resolves with the exit status. */
export async function serve(flags: ServeFlags): Promise<number> {
  const { loaded, quickstartToken } = loadForServe(flags, process.env, process.cwd());
  const port = flags.port === undefined ? undefined : parsePort(flags.port);
  const host = flags.host === undefined ? undefined : parseHost(flags.host);
  const hookgate = await startHookgate(loaded, {
    ...(host !== undefined && { host }),
    ...(port !== undefined && { port }),
  });
  // The handlers are in place before the address is announced: a supervisor that signals as
  // soon as it reads the line must not meet the default action (death by SIGTERM).
  const stopped = new Promise<number>((resolve) => {
    const stop = (signal: string) => {
      hookgate.logger.info({ signal }, 'shutting down');
      hookgate
        .close()
        .then(() => {
          hookgate.logger.info('stopped');
          // The log flush is awaited, but never longer than a second (a vanished stdout reader).
          const fallback = setTimeout(() => resolve(0), 1000);
          hookgate.logger.flush(() => {
            clearTimeout(fallback);
            resolve(0);
          });
        })
        .catch((err: unknown) => {
          process.stderr.write(`hookgate: shutdown failed: ${(err as Error).message}\n`);
          resolve(1);
        });
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  // SIGHUP reloads the config file (the outcome is logged and shown by /readyz).
  process.on('SIGHUP', () => void hookgate.reload('SIGHUP'));
  // One asked for while starting (held by server.ts): the file may have changed since it was read.
  if (takeHeldReload()) void hookgate.reload('SIGHUP');
  // Warned, not refused (as `hookgate check` does without --strict): the setting, never the value.
  for (const warning of startupTokenWarnings(loaded, quickstartToken))
    hookgate.logger.warn({ setting: warning.setting }, warning.message);
  const hooksUrl = `${hookgate.url}${loaded.config.hooks.path}`;
  hookgate.logger.info(
    {
      url: hookgate.url,
      // The process SIGHUP (reload) and SIGTERM go to, also when the bin started it.
      pid: process.pid,
      hooksPath: loaded.config.hooks.path,
      store: hookgate.storeDescription,
      config: loaded.file,
    },
    `listening on ${hookgate.url}`,
  );
  process.stdout.write(
    `hookgate listening on ${hookgate.url} (hooks under ${hooksUrl}, data in ${hookgate.storeDescription})\n`,
  );
  if (hookgate.admin) process.stdout.write(`admin listening on ${hookgate.admin.url}\n`);
  if (!loaded.file) printQuickstart(hooksUrl, quickstartToken);

  return stopped;
}

/** The audit's guessable-token warnings for what serve runs with; a generated token needs none. */
function startupTokenWarnings(loaded: LoadedConfig, generatedToken: string | undefined) {
  if (loaded.file) return guessableTokens(loaded.config);
  return generatedToken === undefined ? guessableTokens(loaded.config, 'HOOKGATE_TOKEN') : [];
}

function printQuickstart(hooksUrl: string, generatedToken: string | undefined): void {
  const token = generatedToken ?? '$HOOKGATE_TOKEN';
  const lines = [
    'Quickstart: no config file found (use --config FILE, HOOKGATE_CONFIG or ./hookgate.yaml).',
    generatedToken
      ? `Hook token (generated for this run; set HOOKGATE_TOKEN to keep one): ${generatedToken}`
      : 'Hook token: the value of HOOKGATE_TOKEN.',
    'Try it:',
    // Double quotes: the shell expands $HOOKGATE_TOKEN there (in single quotes it sent the name).
    `  curl -sS -X POST ${hooksUrl}/wake -H "Authorization: Bearer ${token}" -H 'Content-Type: application/json' -d '{"text":"hello from curl"}'`,
    '',
  ];
  process.stdout.write(lines.join('\n'));
}

// Digits only: Number() reads "" and " " as 0, a random port nobody asked for.
function parsePort(value: string): number {
  const port = /^\d{1,5}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError('--port', 'must be an integer from 0 to 65535');
  }
  return port;
}

// An empty host reaches listen() as none, which listens on every interface (as server.host's
// minLength keeps the config from doing).
function parseHost(value: string): string {
  if (value.trim() === '') {
    throw new ConfigError('--host', 'must not be empty (give an address such as 127.0.0.1)');
  }
  return value;
}

function resolveDir(cwd: string, dir: string): string {
  return dir.startsWith('/') ? dir : `${cwd}/${dir}`;
}

/**
 * `hookgate gmail <setup|status|stop>`: the mail flow's commands, their
 * arguments parsed here so server.ts only dispatches.
 */
import { ConfigError } from '../config.ts';
import { gmailSetup } from './gmail-setup.ts';
import { gmailStatus } from './gmail-status.ts';
import { gmailStop } from './gmail-stop.ts';
import { parseFlags } from './parse-flags.ts';

export const GMAIL_USAGE = `  hookgate gmail setup --account A [--label L] [--project P] [--project-number N] [--topic T]
      [--subscription S] [--push-endpoint URL] [--push-mode oidc|token] [--service-account EMAIL]
      [--client-id ID] [--client-secret-env VAR] [--include-body|--no-include-body]
      [--max-bytes N] [--renew-minutes N]
      [--no-consent] [--config FILE]
  hookgate gmail status [--json] [--config FILE]
  hookgate gmail stop [--config FILE]
`;

/** Run a gmail subcommand; returns the exit status. */
export async function gmailCommand(args: string[], out: (line: string) => void): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'status') {
    const { values } = parseFlags('gmail status', {
      args: rest,
      options: { json: { type: 'boolean' }, config: { type: 'string' } },
    });
    return gmailStatus(values, out);
  }
  if (sub === 'stop') {
    const { values } = parseFlags('gmail stop', {
      args: rest,
      options: { config: { type: 'string' } },
    });
    return gmailStop(values, out);
  }
  if (sub === 'setup') return gmailSetup(setupFlags(rest), out);
  process.stderr.write(`hookgate gmail: unknown subcommand "${sub ?? ''}"\n${GMAIL_USAGE}`);
  return 2;
}

const text = { type: 'string' } as const;

function setupFlags(args: string[]) {
  const { values } = parseFlags('gmail setup', {
    args,
    options: {
      account: text,
      config: text,
      label: text,
      project: text,
      'project-number': text,
      topic: text,
      subscription: text,
      'push-endpoint': text,
      'push-mode': text,
      'service-account': text,
      'client-id': text,
      'client-secret-env': text,
      'include-body': { type: 'boolean' },
      'no-include-body': { type: 'boolean' },
      'max-bytes': text,
      'renew-minutes': text,
      'no-consent': { type: 'boolean' },
    },
  });
  if (!values.account) throw new ConfigError('--account', 'the Gmail address to watch is required');
  const given = values['push-mode'];
  if (given !== undefined && given !== 'oidc' && given !== 'token') {
    throw new ConfigError('--push-mode', 'must be oidc or token');
  }
  const mode: 'oidc' | 'token' | undefined = given;
  // At most one of the two is set: parseFlags refuses --include-body with --no-include-body.
  const includeBody = values['no-include-body'] ? false : values['include-body'];
  return {
    account: values.account,
    consent: values['no-consent'] !== true,
    ...(mode !== undefined && { pushMode: mode }),
    ...(includeBody !== undefined && { includeBody }),
    ...optional({
      config: values.config,
      label: values.label,
      project: values.project,
      projectNumber: values['project-number'],
      topic: values.topic,
      subscription: values.subscription,
      pushEndpoint: values['push-endpoint'],
      serviceAccount: values['service-account'],
      clientId: values['client-id'],
      // The variable's name, not the secret: on the command line it would stay in the shell's
      // history and the process list.
      clientSecretEnv: values['client-secret-env'],
    }),
    ...numbers({ maxBytes: values['max-bytes'], renewMinutes: values['renew-minutes'] }),
  };
}

function optional<T extends Record<string, string | undefined>>(values: T) {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: string;
  };
}

function numbers(values: Record<string, string | undefined>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined) continue;
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0)
      throw new ConfigError(`--${key}`, 'must be a positive integer');
    out[key] = n;
  }
  return out;
}

/**
 * `hookgate gmail setup`: write `hooks.gmail` into the config file (comments
 * and order kept; `${VAR}` references never replaced by plain text), make
 * sure the hooks can boot (a hook token), run the OAuth consent and keep the
 * refresh token in the data directory, and print the gcloud commands that
 * create the topic, Gmail's publish right and the push subscription.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { ConfigError, findConfigFile, loadConfigFile, shieldReferences } from '../config.ts';
import { unshieldReferences } from '../config-document.ts';
import { runConsent } from '../gmail/consent.ts';
import {
  checkProjectFlags,
  commandLine,
  defaultPushServiceAccount,
  gcloudCommands,
  topicToWrite,
} from '../gmail/gcloud-commands.ts';
import { type GmailSetupOptions, writeGmailSetup } from '../gmail/setup-config.ts';
import { writeRefreshToken } from '../gmail/token-file.ts';
import { compileSetup } from './check.ts';

export type GmailSetupFlags = {
  account: string;
  config?: string;
  label?: string;
  project?: string;
  projectNumber?: string;
  topic?: string;
  subscription?: string;
  pushEndpoint?: string;
  pushMode?: 'oidc' | 'token';
  serviceAccount?: string;
  clientId?: string;
  /** The environment variable holding the OAuth client's secret (written as `${VAR}`). */
  clientSecretEnv?: string;
  includeBody?: boolean;
  maxBytes?: number;
  renewMinutes?: number;
  /** Skip the OAuth consent (a refresh token is configured or stored already). */
  consent: boolean;
};

/** Run the setup; exit 0, or 2 when the file would need a secret written over a reference. */
export async function gmailSetup(
  flags: GmailSetupFlags,
  out: (line: string) => void,
): Promise<number> {
  const file = path.resolve(
    findConfigFile(flags.config, process.env, process.cwd()) ?? 'hookgate.yaml',
  );
  // A malformed project is refused before the file is touched, not after it was written.
  checkProjectFlags(flags.project, flags.projectNumber);
  const before = existsSync(file) ? readFileSync(file, 'utf8') : '';
  // A push endpoint given is OIDC's audience (also over a file set up in token mode before the
  // public URL was known); without one, a run again keeps the file's mode.
  const mode =
    flags.pushMode ?? (flags.pushEndpoint ? 'oidc' : (configuredMode(before) ?? 'token'));
  // With a project, the watch's full topic name, whatever names the topic.
  const topic = topicToWrite(flags.project, flags.topic, configuredTopic(before));
  const options = setupOptions({ ...flags, pushMode: mode }, topic);
  const result = writeGmailSetup(withHookToken(before), options);
  if (result.conflicts.length > 0) {
    for (const c of result.conflicts) {
      process.stderr.write(
        `hookgate: ${c.path} is ${c.reference}; set that variable to the new value instead\n`,
      );
    }
    return 2;
  }
  // The new file must boot as the server would check it before it replaces the old one.
  writeChecked(file, result.text);
  out(`Wrote hooks.gmail to ${file}.`);
  for (const secret of result.plainSecrets)
    out(`Note: ${secret} is plain text in the file; better as a \${VAR} reference.`);
  // Boots as the server would: a setting that cannot work stops here, not at the next start.
  const loaded = loadConfigFile(file, process.env);
  const gmail = loaded.config.hooks.gmail;
  if (flags.consent) {
    const clientId = gmail.oauth.clientId;
    if (!clientId)
      throw new ConfigError('hooks.gmail.oauth.clientId', 'needed for the consent (--client-id)');
    const refreshToken = await runConsent(
      {
        account: flags.account,
        clientId,
        ...(gmail.oauth.clientSecret !== undefined && { clientSecret: gmail.oauth.clientSecret }),
        authUrl: gmail.oauth.authUrl,
        tokenUrl: gmail.oauth.tokenUrl,
      },
      (url) => out(`Open this URL to let hookgate read ${flags.account}:\n  ${url}`),
    );
    out(
      `Stored the refresh token in ${writeRefreshToken(loaded.dataDir, flags.account, refreshToken)} (mode 0600).`,
    );
  }
  printGcloud(flags, gmail, result.generatedPushToken, out);
  return 0;
}

function setupOptions(flags: GmailSetupFlags, topic: string | undefined): GmailSetupOptions {
  const mode = flags.pushMode ?? 'oidc';
  const serviceAccountEmail =
    flags.serviceAccount ?? (flags.project ? defaultPushServiceAccount(flags.project) : undefined);
  return {
    account: flags.account,
    env: process.env,
    ...(flags.label !== undefined && { label: flags.label }),
    ...(topic !== undefined && { topic }),
    ...(flags.subscription !== undefined && { subscription: flags.subscription }),
    ...(flags.includeBody !== undefined && { includeBody: flags.includeBody }),
    ...(flags.maxBytes !== undefined && { maxBytes: flags.maxBytes }),
    ...(flags.renewMinutes !== undefined && { renewEveryMinutes: flags.renewMinutes }),
    push: {
      mode,
      // Pub/Sub signs for the audience it is given; setup gives it the push endpoint.
      ...(mode === 'oidc' && flags.pushEndpoint !== undefined && { audience: flags.pushEndpoint }),
      ...(mode === 'oidc' && serviceAccountEmail !== undefined && { serviceAccountEmail }),
    },
    ...((flags.clientId !== undefined || flags.clientSecretEnv !== undefined) && {
      oauth: {
        ...(flags.clientId !== undefined && { clientId: flags.clientId }),
        ...(flags.clientSecretEnv !== undefined && { clientSecretEnv: flags.clientSecretEnv }),
      },
    }),
  };
}

/** The push mode the file already has (a setup run again without an endpoint keeps it). */
function configuredMode(text: string): 'oidc' | 'token' | undefined {
  const mode = configuredGmail(text, ['push', 'mode']);
  return mode === 'oidc' || mode === 'token' ? mode : undefined;
}

/** The topic the file already names, if it names one (a reference read back as `${NAME}`). */
function configuredTopic(text: string): string | undefined {
  const topic = configuredGmail(text, ['topic']);
  if (typeof topic !== 'string' || topic === '') return undefined;
  return unshieldReferences(topic);
}

// Parsed as the loader parses it, so `{ topic: ${TOPIC} }` is read, not a parse error.
function configuredGmail(text: string, key: string[]): unknown {
  const doc = parseDocument(shieldReferences(text === '' ? '{}' : text));
  return doc.errors.length > 0 ? undefined : doc.getIn(['hooks', 'gmail', ...key]);
}

/**
 * The hooks need a token to boot; a file without one gets a generated one. Parsed as the loader
 * parses it (`{ topic: ${TOPIC} }` included); the references it holds come back as written.
 */
function withHookToken(text: string): string {
  const doc = parseDocument(shieldReferences(text));
  if (doc.errors.length > 0) return text;
  // A new file: a block mapping, so what is added is YAML in block style (`{}` made it all JSON).
  if (doc.contents === null) doc.contents = doc.createNode({}) as unknown as typeof doc.contents;
  if (doc.hasIn(['hooks', 'token'])) return text;
  doc.setIn(['hooks', 'token'], randomBytes(24).toString('base64url'));
  return String(doc);
}

function printGcloud(
  flags: GmailSetupFlags,
  gmail: ReturnType<typeof loadConfigFile>['config']['hooks']['gmail'],
  generatedPushToken: string | undefined,
  out: (line: string) => void,
): void {
  // What setup was not told is shown as a placeholder to replace, never left out.
  const project =
    flags.project ?? /^projects\/([^/]+)\//.exec(gmail.topic)?.[1] ?? 'your-project-id';
  const pushEndpoint = flags.pushEndpoint ?? `https://your-host.example${gmail.serve.path}`;
  const placeholders = [
    ...(project === 'your-project-id' ? [project] : []),
    ...(flags.pushEndpoint === undefined ? [pushEndpoint] : []),
    ...(flags.projectNumber === undefined && gmail.push.mode === 'oidc' ? ['PROJECT_NUMBER'] : []),
  ];
  if (placeholders.length > 0) {
    out(`In the commands below, replace ${placeholders.join(', ')} (or give them to setup).`);
  }
  const commands = gcloudCommands({
    project,
    ...(flags.projectNumber !== undefined && { projectNumber: flags.projectNumber }),
    topic: gmail.topic,
    subscription: gmail.subscription,
    pushEndpoint,
    mode: gmail.push.mode,
    ...(gmail.pushToken !== undefined && { pushToken: generatedPushToken ?? gmail.pushToken }),
    ...(gmail.push.serviceAccountEmail !== undefined && {
      serviceAccountEmail: gmail.push.serviceAccountEmail,
    }),
    ...(gmail.push.audience !== undefined && { audience: gmail.push.audience }),
  });
  out('Then, in Google Cloud:');
  for (const command of commands) out(`  # ${command.purpose}\n  ${commandLine(command.argv)}`);
}

function writeChecked(file: string, text: string): void {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.setup.tmp`);
  writeFileSync(temp, text, { mode: 0o600 });
  try {
    compileSetup(temp, process.env, path.dirname(file));
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
  renameSync(temp, file);
}

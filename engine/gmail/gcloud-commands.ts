/**
 * The `gcloud` commands that make a Google Cloud project deliver Gmail's notifications to
 * hookgate: the APIs, the Pub/Sub topic, Gmail's right to publish to it, and a push
 * subscription authenticated by an OIDC token (a service account that Pub/Sub may mint tokens
 * for) or, in token mode, by a secret in the push URL. Pure: it returns argv arrays to run
 * without a shell, and the same commands quoted for a shell, for `hookgate gmail setup` to run
 * or print. Every command names its project, so none depends on gcloud's current project.
 */
import { GMAIL_DEFAULTS } from '../../schemas/gmail.ts';
import { ConfigError } from '../config.ts';

/** What the commands are made of. */
export type GcloudOptions = {
  /** The project that owns the OAuth client (Gmail requires the topic there). */
  project: string;
  /** Its number, for the Pub/Sub service agent; unknown: PROJECT_NUMBER, with the command that finds it. */
  projectNumber?: string;
  /** hooks.gmail.topic: a short name or projects/<project>/topics/<name>. */
  topic: string;
  subscription: string;
  /** The public HTTPS URL of the push listener (serve.path behind the operator's proxy). */
  pushEndpoint: string;
  mode: 'oidc' | 'token';
  /** token mode: the secret added to the push URL as ?token=. */
  pushToken?: string;
  /** oidc mode: default hookgate-gmail-push@<project>.iam.gserviceaccount.com. */
  serviceAccountEmail?: string;
  /** oidc mode: default the push endpoint. */
  audience?: string;
  /** Pub/Sub's wait for an answer, also the push request timeout (10 to 600). Default 30. */
  ackDeadlineSeconds?: number;
};

/** One command: its argv (argv[0] is gcloud) and why it is run. */
export type GcloudCommand = { argv: string[]; purpose: string };

/** The service account Gmail publishes as (Gmail push guide). */
export const GMAIL_PUBLISHER = 'gmail-api-push@system.gserviceaccount.com';
export const DEFAULT_PUSH_ACCOUNT = 'hookgate-gmail-push';
export const DEFAULT_ACK_DEADLINE_SECONDS = 30;

const PROJECT_ID = /^(?:[a-z][a-z0-9.-]{0,62}:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$/;
// Pub/Sub resource names: a letter first, then letters, digits and - _ . ~ + %, 3 to 255 long.
const RESOURCE = /^(?!goog)[A-Za-z][A-Za-z0-9_.~+%-]{2,254}$/;
const ACCOUNT_ID = /^[a-z][a-z0-9-]{4,28}[a-z0-9]$/;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** Setup's `--project` and `--project-number`, checked before anything is written. */
export function checkProjectFlags(
  project: string | undefined,
  projectNumber: string | undefined,
): void {
  if (project !== undefined) {
    check(PROJECT_ID.test(project), '--project', 'is not a Google Cloud project id');
  }
  if (projectNumber !== undefined) {
    check(/^\d{1,20}$/.test(projectNumber), '--project-number', 'must be digits');
  }
}

/**
 * The topic setup writes, undefined to leave the file's alone. With a project, a short name
 * (`--topic`, else the file's, else the default) becomes `projects/<project>/topics/<name>`, the
 * full name the watch needs; a full name or a `${VAR}` reference is left as it is.
 */
export function topicToWrite(
  project: string | undefined,
  flagTopic: string | undefined,
  fileTopic: string | undefined,
): string | undefined {
  if (project === undefined) return flagTopic;
  const name = flagTopic ?? fileTopic ?? GMAIL_DEFAULTS.topic;
  if (name.includes('/') || name.includes('${')) return flagTopic;
  return `projects/${project}/topics/${name}`;
}

/** The command that prints a project's number. */
export function projectNumberCommand(project: string): GcloudCommand {
  check(PROJECT_ID.test(project), 'project', 'is not a Google Cloud project id');
  return {
    argv: ['gcloud', 'projects', 'describe', project, '--format=value(projectNumber)'],
    purpose: 'Print the project number (the Pub/Sub service agent is named after it).',
  };
}

/** The commands, in the order to run them. */
export function gcloudCommands(options: GcloudOptions): GcloudCommand[] {
  const { project } = options;
  check(PROJECT_ID.test(project), 'project', 'is not a Google Cloud project id');
  if (options.projectNumber !== undefined) {
    check(/^\d{1,20}$/.test(options.projectNumber), 'projectNumber', 'must be digits');
  }
  const topic = topicName(options.topic, project);
  check(RESOURCE.test(options.subscription), 'hooks.gmail.subscription', 'is not a Pub/Sub name');
  const at = `--project=${project}`;
  const commands: GcloudCommand[] = [
    {
      argv: ['gcloud', 'services', 'enable', 'gmail.googleapis.com', 'pubsub.googleapis.com', at],
      purpose: 'Enable the Gmail and Pub/Sub APIs.',
    },
    {
      argv: ['gcloud', 'pubsub', 'topics', 'create', topic, at],
      purpose: 'Create the topic Gmail publishes mailbox changes to.',
    },
    {
      argv: [
        ...['gcloud', 'pubsub', 'topics', 'add-iam-policy-binding', topic, at],
        ...[`--member=serviceAccount:${GMAIL_PUBLISHER}`, '--role=roles/pubsub.publisher'],
      ],
      purpose: 'Let Gmail publish to the topic.',
    },
  ];
  if (options.mode === 'oidc') commands.push(...oidcAccountCommands(options));
  commands.push(subscriptionCommand(options, topic));
  return commands;
}

// The push identity: its creation when it lives in this project, and Pub/Sub's right to sign as it.
function oidcAccountCommands(options: GcloudOptions): GcloudCommand[] {
  const { project } = options;
  const email = pushAccount(options);
  const commands: GcloudCommand[] = [];
  const [accountId, domain] = email.split('@') as [string, string];
  if (domain === `${project}.iam.gserviceaccount.com`) {
    check(ACCOUNT_ID.test(accountId), 'push.serviceAccountEmail', 'has an invalid account id');
    commands.push({
      argv: ['gcloud', 'iam', 'service-accounts', 'create', accountId, `--project=${project}`],
      purpose: 'Create the service account whose OIDC token signs each push.',
    });
  }
  if (options.projectNumber === undefined) {
    commands.push({
      ...projectNumberCommand(project),
      purpose: 'Find the project number: it replaces PROJECT_NUMBER in the next command.',
    });
  }
  const agent = `service-${options.projectNumber ?? 'PROJECT_NUMBER'}@gcp-sa-pubsub.iam.gserviceaccount.com`;
  commands.push({
    argv: [
      'gcloud',
      'projects',
      'add-iam-policy-binding',
      project,
      `--member=serviceAccount:${agent}`,
      '--role=roles/iam.serviceAccountTokenCreator',
    ],
    purpose: 'Let the Pub/Sub service agent mint OIDC tokens for the push service account.',
  });
  return commands;
}

function subscriptionCommand(options: GcloudOptions, topic: string): GcloudCommand {
  const deadline = options.ackDeadlineSeconds ?? DEFAULT_ACK_DEADLINE_SECONDS;
  check(
    Number.isInteger(deadline) && deadline >= 10 && deadline <= 600,
    'ackDeadlineSeconds',
    'must be 10 to 600',
  );
  const endpoint = httpsUrl(options.pushEndpoint, 'pushEndpoint');
  const argv = ['gcloud', 'pubsub', 'subscriptions', 'create', options.subscription];
  argv.push(`--project=${options.project}`, `--topic=${topic}`);
  if (options.mode === 'token') {
    const token = options.pushToken ?? '';
    check(
      token.length >= 16,
      'hooks.gmail.pushToken',
      'must be set (16 characters or more) in token mode',
    );
    endpoint.searchParams.set('token', token);
    argv.push(`--push-endpoint=${endpoint.href}`);
  } else {
    const audience = options.audience ?? endpoint.href;
    check(audience.trim() !== '', 'push.audience', 'must not be empty');
    argv.push(
      `--push-endpoint=${endpoint.href}`,
      `--push-auth-service-account=${pushAccount(options)}`,
      `--push-auth-token-audience=${audience}`,
    );
  }
  argv.push(`--ack-deadline=${deadline}`);
  const purpose =
    options.mode === 'token'
      ? 'Create the push subscription; its URL carries the push token (readable by anyone who can view the subscription).'
      : 'Create the push subscription with OIDC authentication (you need iam.serviceAccounts.actAs on the push service account).';
  return { argv, purpose };
}

/** A POSIX shell word for `arg`: bare when it is plainly safe, else single-quoted. */
export function shellQuote(arg: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** A command as one shell line; `--flag=value` keeps the flag bare and quotes the value. */
export function commandLine(argv: readonly string[]): string {
  return argv
    .map((arg) => {
      const flag = /^(--[a-z][a-z0-9-]*=)([\s\S]*)$/.exec(arg);
      return flag ? `${flag[1]}${shellQuote(flag[2]!)}` : shellQuote(arg);
    })
    .join(' ');
}

function topicName(topic: string, project: string): string {
  const full = /^projects\/([^/]+)\/topics\/([^/]+)$/.exec(topic);
  if (full) {
    check(
      full[1] === project,
      'hooks.gmail.topic',
      `must be in project ${project} (the OAuth client's)`,
    );
  }
  const name = full ? full[2]! : topic;
  check(RESOURCE.test(name), 'hooks.gmail.topic', 'is not a Pub/Sub name');
  return name;
}

/** The push service account setup creates when none is named (write it to push.serviceAccountEmail). */
export function defaultPushServiceAccount(project: string): string {
  return `${DEFAULT_PUSH_ACCOUNT}@${project}.iam.gserviceaccount.com`;
}

function pushAccount(options: GcloudOptions): string {
  const email = options.serviceAccountEmail ?? defaultPushServiceAccount(options.project);
  check(EMAIL.test(email), 'push.serviceAccountEmail', 'is not an email address');
  return email;
}

function httpsUrl(text: string, at: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(at, 'is not a URL');
  }
  // Pub/Sub pushes only to HTTPS; credentials in the URL would be sent to Google and logged.
  check(url.protocol === 'https:', at, 'must be an https:// URL');
  check(url.username === '' && url.password === '', at, 'must not hold a user name or password');
  url.hash = '';
  return url;
}

function check(ok: boolean, at: string, message: string): void {
  if (!ok) throw new ConfigError(at, message);
}

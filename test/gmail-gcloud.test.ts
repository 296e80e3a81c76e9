/**
 * gcloudCommands: the commands an operator runs (or setup runs) to have Gmail's notifications
 * pushed to hookgate, in OIDC and token mode, their refusals, and shell quoting that a real
 * shell reads back as the same arguments whatever they contain.
 */
import { execFileSync } from 'node:child_process';
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../engine/config.ts';
import {
  commandLine,
  defaultPushServiceAccount,
  type GcloudOptions,
  gcloudCommands,
  projectNumberCommand,
  shellQuote,
} from '../engine/gmail/gcloud-commands.ts';

const BASE: GcloudOptions = {
  project: 'my-project',
  projectNumber: '123456789012',
  topic: 'gog-gmail-watch',
  subscription: 'gog-gmail-watch-push',
  pushEndpoint: 'https://mail.example.com/gmail-pubsub',
  mode: 'oidc',
};

const lines = (options: GcloudOptions) => gcloudCommands(options).map((c) => commandLine(c.argv));

// What a POSIX shell makes of a command line: its words, one per element.
function shellWords(line: string): string[] {
  const script = `set -- ${line}; for a in "$@"; do printf '%s\\0' "$a"; done`;
  return execFileSync('sh', ['-c', script], { encoding: 'utf8' }).split('\0').slice(0, -1);
}

describe('gcloudCommands: OIDC mode', () => {
  it('creates the topic, lets Gmail publish, sets up the push identity and subscribes', () => {
    expect(lines(BASE)).toEqual([
      'gcloud services enable gmail.googleapis.com pubsub.googleapis.com --project=my-project',
      'gcloud pubsub topics create gog-gmail-watch --project=my-project',
      'gcloud pubsub topics add-iam-policy-binding gog-gmail-watch --project=my-project' +
        ' --member=serviceAccount:gmail-api-push@system.gserviceaccount.com' +
        ' --role=roles/pubsub.publisher',
      'gcloud iam service-accounts create hookgate-gmail-push --project=my-project',
      'gcloud projects add-iam-policy-binding my-project' +
        ' --member=serviceAccount:service-123456789012@gcp-sa-pubsub.iam.gserviceaccount.com' +
        ' --role=roles/iam.serviceAccountTokenCreator',
      'gcloud pubsub subscriptions create gog-gmail-watch-push --project=my-project' +
        ' --topic=gog-gmail-watch --push-endpoint=https://mail.example.com/gmail-pubsub' +
        ' --push-auth-service-account=hookgate-gmail-push@my-project.iam.gserviceaccount.com' +
        ' --push-auth-token-audience=https://mail.example.com/gmail-pubsub --ack-deadline=30',
    ]);
  });

  it('names the default push account so setup can write it to push.serviceAccountEmail', () => {
    const last = gcloudCommands(BASE).at(-1)!;
    expect(last.argv).toContain(
      `--push-auth-service-account=${defaultPushServiceAccount('my-project')}`,
    );
  });

  it('takes the topic from its full path', () => {
    const topic = 'projects/my-project/topics/gog-gmail-watch';
    expect(lines({ ...BASE, topic })).toEqual(lines(BASE));
  });

  it.each([
    [
      'a custom audience',
      { audience: 'hookgate-gmail' },
      '--push-auth-token-audience=hookgate-gmail',
    ],
    ['a longer ack deadline', { ackDeadlineSeconds: 120 }, '--ack-deadline=120'],
    [
      'a named account of the project',
      { serviceAccountEmail: 'mail-push@my-project.iam.gserviceaccount.com' },
      '--push-auth-service-account=mail-push@my-project.iam.gserviceaccount.com',
    ],
  ])('uses %s', (_name, extra, flag) => {
    expect(lines({ ...BASE, ...extra }).at(-1)).toContain(flag);
  });

  it('creates a named account of the project, but not one of another project', () => {
    const own = lines({
      ...BASE,
      serviceAccountEmail: 'mail-push@my-project.iam.gserviceaccount.com',
    });
    expect(own).toContain('gcloud iam service-accounts create mail-push --project=my-project');
    const other = lines({ ...BASE, serviceAccountEmail: 'push@other.iam.gserviceaccount.com' });
    expect(other.some((line) => line.includes('service-accounts create'))).toBe(false);
  });
});

describe('gcloudCommands: token mode', () => {
  const token = 'S3cr3t_token-0123456789';

  it('puts the token in the push URL and needs no service account', () => {
    const all = lines({ ...BASE, mode: 'token', pushToken: token });
    expect(all).toHaveLength(4);
    expect(all.at(-1)).toBe(
      'gcloud pubsub subscriptions create gog-gmail-watch-push --project=my-project' +
        ` --topic=gog-gmail-watch --push-endpoint='https://mail.example.com/gmail-pubsub?token=${token}'` +
        ' --ack-deadline=30',
    );
  });

  it('replaces a token already in the endpoint URL', () => {
    const pushEndpoint = 'https://mail.example.com/gmail-pubsub?token=old&x=1';
    const last = gcloudCommands({ ...BASE, mode: 'token', pushToken: token, pushEndpoint }).at(-1)!;
    expect(last.argv).toContain(
      `--push-endpoint=https://mail.example.com/gmail-pubsub?token=${token}&x=1`,
    );
  });
});

describe('gcloudCommands: refusals', () => {
  it.each([
    ['a plain-HTTP endpoint', { pushEndpoint: 'http://mail.example.com/p' }, 'pushEndpoint'],
    [
      'credentials in the endpoint',
      { pushEndpoint: 'https://u:p@mail.example.com/p' },
      'pushEndpoint',
    ],
    ['an endpoint that is not a URL', { pushEndpoint: 'mail.example.com/p' }, 'pushEndpoint'],
    ['a topic of another project', { topic: 'projects/other-proj/topics/t1' }, 'hooks.gmail.topic'],
    ['a reserved topic name', { topic: 'goog-topic' }, 'hooks.gmail.topic'],
    ['a topic with a space', { topic: 'my topic' }, 'hooks.gmail.topic'],
    ['a subscription with a slash', { subscription: 'a/b/c' }, 'hooks.gmail.subscription'],
    ['an invalid project id', { project: 'My_Project' }, 'project'],
    ['a project id with a shell command', { project: 'p$(id)xx' }, 'project'],
    ['a project number with letters', { projectNumber: '12ab' }, 'projectNumber'],
    ['token mode without a token', { mode: 'token' as const }, 'hooks.gmail.pushToken'],
    ['a short token', { mode: 'token' as const, pushToken: 'short' }, 'hooks.gmail.pushToken'],
    ['an ack deadline under 10 s', { ackDeadlineSeconds: 5 }, 'ackDeadlineSeconds'],
    ['an ack deadline over 600 s', { ackDeadlineSeconds: 601 }, 'ackDeadlineSeconds'],
    [
      'a push account that is no address',
      { serviceAccountEmail: 'nobody' },
      'push.serviceAccountEmail',
    ],
  ])('refuses %s', (_name, extra, where) => {
    const attempt = () => gcloudCommands({ ...BASE, ...extra });
    expect(attempt).toThrow(ConfigError);
    try {
      attempt();
    } catch (err) {
      expect((err as ConfigError).path).toBe(where);
    }
  });
});

// Characters a shell treats specially, and ordinary text (argv cannot hold NUL).
const shellCharacter = fc.oneof(
  fc.constantFrom(...'\'"\\$`!*?[]{}()<>|&;#~=% \t\n'),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }),
);

describe('shell quoting', () => {
  it('asks for the project number', () => {
    expect(commandLine(projectNumberCommand('my-project').argv)).toBe(
      "gcloud projects describe my-project --format='value(projectNumber)'",
    );
  });

  it.each([
    ['plain', 'gog-gmail-watch', 'gog-gmail-watch'],
    ['a space', 'a b', "'a b'"],
    ['a quote', "it's", "'it'\\''s'"],
    ['an empty string', '', "''"],
  ])('quotes %s', (_name, input, quoted) => {
    expect(shellQuote(input)).toBe(quoted);
  });

  it('a token made to break out of its quotes stays one argument (shell injection)', () => {
    const pushToken = "x'; touch /tmp/pwned; echo '0123456789abcdef";
    const command = gcloudCommands({ ...BASE, mode: 'token', pushToken }).at(-1)!;
    expect(shellWords(commandLine(command.argv))).toEqual(command.argv);
  });

  test.prop([fc.array(fc.string({ unit: shellCharacter }), { maxLength: 4 })], {
    numRuns: 40,
  })('a shell reads any quoted arguments back unchanged', (args) => {
    const argv = ['gcloud', ...args, ...args.map((a) => `--flag=${a}`)];
    expect(shellWords(commandLine(argv))).toEqual(argv);
  });
});

describe('without the project number', () => {
  it('prints the command that finds it, then the grant with PROJECT_NUMBER to replace', () => {
    const { projectNumber: _known, ...options } = BASE;
    const lines = gcloudCommands(options).map((c) => commandLine(c.argv));
    const find = lines.findIndex((line) => line.includes('projects describe'));
    const grant = lines.findIndex((line) => line.includes('service-PROJECT_NUMBER@gcp-sa-pubsub'));
    expect(find).toBeGreaterThanOrEqual(0);
    expect(grant).toBe(find + 1);
  });
});

/**
 * Providers' payloads for the preset tests: every example event of
 * `@octokit/webhooks-examples` with what the github preset should do with it
 * (stated here independently of the preset), and Stripe and Slack bodies
 * built from their documented shapes.
 */
import { createRequire } from 'node:module';

type Example = Record<string, unknown> & { action?: string };
type EventExamples = { name: string; examples: Example[] };

export type GithubCase = {
  event: string;
  action: string | undefined;
  index: number;
  payload: Example;
  expected: 'agent' | 'ignore';
};

const FAILED = ['failure', 'timed_out', 'startup_failure'];
const get = (value: unknown, path: string): unknown =>
  path.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], value);
const human = (p: Example) => get(p, 'sender.type') !== 'Bot';
const actionIs =
  (...actions: string[]) =>
  (p: Example) =>
    actions.includes(p.action ?? '');

/** What wakes an agent, per event; everything else (ping included) is ignored. */
const WAKES: Record<string, (payload: Example) => boolean> = {
  issues: actionIs('opened', 'reopened', 'closed', 'assigned'),
  issue_comment: (p) => actionIs('created')(p) && human(p),
  pull_request: actionIs('opened', 'reopened', 'closed', 'ready_for_review', 'review_requested'),
  pull_request_review: (p) => actionIs('submitted')(p) && human(p),
  push: () => true,
  release: actionIs('published'),
  workflow_run: (p) =>
    actionIs('completed')(p) && FAILED.includes(String(get(p, 'workflow_run.conclusion'))),
  check_suite: (p) =>
    actionIs('completed')(p) &&
    FAILED.includes(String(get(p, 'check_suite.conclusion'))) &&
    get(p, 'check_suite.app.slug') !== 'github-actions',
  discussion: actionIs('created', 'answered'),
  discussion_comment: (p) => actionIs('created')(p) && human(p),
};

/** Every example of every event in @octokit/webhooks-examples, with the expected outcome. */
export function githubEvents(): GithubCase[] {
  const all = createRequire(import.meta.url)('@octokit/webhooks-examples') as EventExamples[];
  return all.flatMap(({ name, examples }) =>
    examples.map((payload, index) => ({
      event: name,
      action: payload.action,
      index,
      payload,
      expected: WAKES[name]?.(payload) ? ('agent' as const) : ('ignore' as const),
    })),
  );
}

/** A Stripe v1 event (snapshot) around `object`, as Stripe's API reference shows it. */
export function stripeEvent(type: string, object: Record<string, unknown>, livemode = false) {
  return {
    id: `evt_${type.replaceAll('.', '_')}`,
    object: 'event',
    api_version: '2025-03-31.basil',
    created: 1_763_633_111,
    type,
    livemode,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: { object },
  };
}

/** An Events API `event_callback` envelope around `event`. */
export function slackEvent(event: Record<string, unknown>) {
  return {
    token: 'legacy-verification-token',
    team_id: 'T0TEAM',
    api_app_id: 'A0APP',
    event: { event_ts: '1700000000.000100', ...event },
    type: 'event_callback',
    event_id: 'Ev0EVENT',
    event_time: 1_700_000_000,
    authorizations: [{ team_id: 'T0TEAM', user_id: 'UBOT', is_bot: true }],
  };
}

/** The form fields of a slash command, as the body stage hands them on. */
export function slackCommand(fields: { command: string; text: string } & Record<string, string>) {
  return {
    token: 'legacy-verification-token',
    team_id: 'T0TEAM',
    team_domain: 'example',
    channel_id: 'C0OPS',
    channel_name: 'ops',
    user_id: 'U0ADA',
    user_name: 'ada',
    api_app_id: 'A0APP',
    response_url: 'https://hooks.slack.com/commands/T0TEAM/1/abc',
    trigger_id: '1.2.abc',
    ...fields,
  };
}

/** A `block_actions` interactivity payload (the JSON of the `payload` form field). */
export function slackInteraction() {
  return {
    type: 'block_actions',
    user: { id: 'U0ADA', username: 'ada', name: 'ada', team_id: 'T0TEAM' },
    api_app_id: 'A0APP',
    team: { id: 'T0TEAM', domain: 'example' },
    channel: { id: 'C0OPS', name: 'ops' },
    trigger_id: '1.2.abc',
    response_url: 'https://hooks.slack.com/actions/T0TEAM/1/abc',
    actions: [
      {
        type: 'button',
        action_id: 'approve_deploy',
        block_id: 'b1',
        value: 'v42',
        action_ts: '1700000000.1',
      },
    ],
  };
}

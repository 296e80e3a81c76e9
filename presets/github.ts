/**
 * The `github` preset: a repository's (or organisation's) webhook posted to
 * `<hooks_path>/github`, signed with `X-Hub-Signature-256`. The event is named
 * by the `X-GitHub-Event` header. Events worth a look wake an agent, one
 * session per repository (`hook:github:<owner>@<repo>`), with a one-line
 * summary followed by the essentials; `ping` and every other event or action
 * are answered 200 and ignored (GitHub marks a non-2xx delivery as failed).
 * Comments and reviews written by bots are ignored too, so an agent that
 * answers on GitHub as an app does not wake itself.
 */
import type { Mapping } from '../schemas/mapping.ts';

// `{{...}}` of a value cut to one line of at most `max` characters.
const line = (path: string, max = 120) => `{{truncate (oneLine ${path}) ${max}}}`;
// A `Label: value` line, present only when the value is (false is a value: `Merged: false`).
const fact = (label: string, path: string) =>
  `{{#if (present ${path})}}${label}: ${line(path, 300)}\n{{/if}}`;
// The first part of a long text (issue body, comment), after a blank line.
const excerpt = (path: string) => `{{#if ${path}}}\n{{truncate ${path} 4000}}\n{{/if}}`;

const REPO = line('payload.repository.full_name', 100);
const SENDER = line('payload.sender.login', 60);
const COMMON = [
  fact('Repository', 'payload.repository.full_name'),
  fact('Sender', 'payload.sender.login'),
  fact('Action', 'payload.action'),
];

const has = (key: string) => ({ '!!': [{ var: `payload.${key}` }] });
const lacks = (key: string) => ({ '!': [{ var: `payload.${key}` }] });

// X-GitHub-Event is not signed (the signature covers the body alone), and a delivery a mapping
// ignored is not remembered: its signed bytes could come again under another event name. So
// each event is also known by the objects its own body carries, and those of its siblings that
// share them are absent; a body then speaks for its own event only.
const SHAPES: Readonly<Record<string, readonly Record<string, unknown>[]>> = Object.freeze({
  issues: [has('issue'), lacks('comment')],
  issue_comment: [has('issue'), has('comment')],
  pull_request: [has('pull_request'), lacks('review'), lacks('comment'), lacks('thread')],
  pull_request_review: [has('pull_request'), has('review')],
  push: [has('ref'), has('pusher')],
  release: [has('release')],
  workflow_run: [has('workflow_run')],
  check_suite: [has('check_suite')],
  discussion: [has('discussion'), lacks('comment')],
  discussion_comment: [has('discussion'), has('comment')],
});

const event = (name: string) => ({
  and: [{ '==': [{ var: 'headers.x-github-event' }, name] }, ...(SHAPES[name] ?? [])],
});
const actionIn = (actions: readonly string[]) => ({ in: [{ var: 'payload.action' }, actions] });
const notBot = { '!=': [{ var: 'payload.sender.type' }, 'Bot'] };

/** An agent mapping for one event: a summary line, then the common and the event's own facts. */
function agent(
  name: string,
  conditions: readonly Record<string, unknown>[],
  summary: string,
  facts: string[],
) {
  const mapping: Mapping = {
    id: `github-${name}`,
    match: { path: 'github', when: { and: conditions } },
    action: 'agent',
    name: 'GitHub',
    label: 'GitHub',
    wakeMode: 'now',
    templates: {
      message: [`${summary}\n`, ...COMMON, ...facts].join(''),
      sessionKey: 'hook:github:{{keySegment (default payload.repository.full_name "none")}}',
    },
  };
  return mapping;
}

const labels =
  '{{#if payload.issue.labels.length}}Labels: {{#each payload.issue.labels}}{{#if @index}}, {{/if}}{{oneLine name}}{{/each}}\n{{/if}}';

const ISSUE_KIND = '{{#if payload.issue.pull_request}}pull request{{else}}issue{{/if}}';
const PR_VERB =
  '{{#if payload.pull_request.merged}}merged{{else if (eq payload.action "review_requested")}}review requested{{else if (eq payload.action "ready_for_review")}}ready for review{{else}}{{oneLine payload.action}}{{/if}}';
const PUSH_WHAT = `{{#if payload.deleted}}${line('payload.ref')} deleted{{else if payload.created}}${line('payload.ref')} created{{else}}{{payload.commits.length}} commit(s) pushed to ${line('payload.ref')}{{/if}}`;
const FAILED = ['failure', 'timed_out', 'startup_failure'];

/** The preset's mappings, in matching order; the last ignores whatever the others do not take. */
export const githubMappings: readonly Mapping[] = Object.freeze([
  { id: 'github-ping', match: { path: 'github', when: event('ping') }, action: 'ignore' },
  agent(
    'issues',
    [event('issues'), actionIn(['opened', 'reopened', 'closed', 'assigned'])],
    `${REPO}: issue #{{payload.issue.number}} {{oneLine payload.action}} by ${SENDER}: ${line('payload.issue.title')}`,
    [
      fact('Title', 'payload.issue.title'),
      fact('URL', 'payload.issue.html_url'),
      fact('State', 'payload.issue.state'),
      fact('Reason', 'payload.issue.state_reason'),
      fact('Assignee', 'payload.assignee.login'),
      labels,
      excerpt('payload.issue.body'),
    ],
  ),
  agent(
    'issue_comment',
    [event('issue_comment'), actionIn(['created']), notBot],
    `${REPO}: new comment on ${ISSUE_KIND} #{{payload.issue.number}} by ${SENDER}: ${line('payload.issue.title')}`,
    [
      fact('Title', 'payload.issue.title'),
      fact('URL', 'payload.comment.html_url'),
      fact('State', 'payload.issue.state'),
      excerpt('payload.comment.body'),
    ],
  ),
  agent(
    'pull_request',
    [
      event('pull_request'),
      actionIn(['opened', 'reopened', 'closed', 'ready_for_review', 'review_requested']),
    ],
    `${REPO}: pull request #{{payload.pull_request.number}} ${PR_VERB} by ${SENDER}: ${line('payload.pull_request.title')}`,
    [
      fact('Title', 'payload.pull_request.title'),
      fact('URL', 'payload.pull_request.html_url'),
      fact('Branches', 'payload.pull_request.head.label'),
      fact('Into', 'payload.pull_request.base.ref'),
      fact('Draft', 'payload.pull_request.draft'),
      fact('Merged', 'payload.pull_request.merged'),
      fact('Requested reviewer', 'payload.requested_reviewer.login'),
      fact('Requested team', 'payload.requested_team.name'),
      excerpt('payload.pull_request.body'),
    ],
  ),
  agent(
    'pull_request_review',
    [event('pull_request_review'), actionIn(['submitted']), notBot],
    `${REPO}: pull request #{{payload.pull_request.number}} reviewed ({{oneLine payload.review.state}}) by ${SENDER}: ${line('payload.pull_request.title')}`,
    [
      fact('Title', 'payload.pull_request.title'),
      fact('URL', 'payload.review.html_url'),
      fact('Review', 'payload.review.state'),
      excerpt('payload.review.body'),
    ],
  ),
  agent(
    'push',
    [event('push')],
    `${REPO}: ${PUSH_WHAT} by ${SENDER}{{#if payload.head_commit.message}}: ${line('payload.head_commit.message')}{{/if}}`,
    [
      fact('Ref', 'payload.ref'),
      'Commits: {{payload.commits.length}}\n',
      fact('Compare', 'payload.compare'),
      fact('Head commit', 'payload.head_commit.id'),
      excerpt('payload.head_commit.message'),
    ],
  ),
  agent(
    'release',
    [event('release'), actionIn(['published'])],
    `${REPO}: release ${line('payload.release.tag_name', 60)} published by ${SENDER}: ${line('(default payload.release.name payload.release.tag_name)')}`,
    [
      fact('Tag', 'payload.release.tag_name'),
      fact('Name', 'payload.release.name'),
      fact('URL', 'payload.release.html_url'),
      fact('Prerelease', 'payload.release.prerelease'),
      excerpt('payload.release.body'),
    ],
  ),
  agent(
    'workflow_run',
    [
      event('workflow_run'),
      actionIn(['completed']),
      { in: [{ var: 'payload.workflow_run.conclusion' }, FAILED] },
    ],
    `${REPO}: workflow ${line('payload.workflow_run.name', 80)} {{oneLine payload.workflow_run.conclusion}} on ${line('payload.workflow_run.head_branch', 80)} by ${SENDER}: ${line('(default payload.workflow_run.display_title payload.workflow_run.head_commit.message)')}`,
    [
      fact('Workflow', 'payload.workflow_run.name'),
      fact('Conclusion', 'payload.workflow_run.conclusion'),
      fact('Branch', 'payload.workflow_run.head_branch'),
      fact('Commit', 'payload.workflow_run.head_sha'),
      fact('URL', 'payload.workflow_run.html_url'),
    ],
  ),
  agent(
    // GitHub Actions failures arrive as workflow_run; this is for other CI apps.
    'check_suite',
    [
      event('check_suite'),
      actionIn(['completed']),
      { in: [{ var: 'payload.check_suite.conclusion' }, FAILED] },
      { '!=': [{ var: 'payload.check_suite.app.slug' }, 'github-actions'] },
    ],
    `${REPO}: checks of ${line('payload.check_suite.app.name', 60)} {{oneLine payload.check_suite.conclusion}} on ${line('payload.check_suite.head_branch', 80)} by ${SENDER}`,
    [
      fact('App', 'payload.check_suite.app.name'),
      fact('Conclusion', 'payload.check_suite.conclusion'),
      fact('Branch', 'payload.check_suite.head_branch'),
      fact('Commit', 'payload.check_suite.head_sha'),
    ],
  ),
  agent(
    'discussion',
    [event('discussion'), actionIn(['created', 'answered'])],
    `${REPO}: discussion #{{payload.discussion.number}} {{oneLine payload.action}} by ${SENDER}: ${line('payload.discussion.title')}`,
    [
      fact('Title', 'payload.discussion.title'),
      fact('Category', 'payload.discussion.category.name'),
      fact('URL', 'payload.discussion.html_url'),
      excerpt('payload.discussion.body'),
    ],
  ),
  agent(
    'discussion_comment',
    [event('discussion_comment'), actionIn(['created']), notBot],
    `${REPO}: new comment on discussion #{{payload.discussion.number}} by ${SENDER}: ${line('payload.discussion.title')}`,
    [
      fact('Title', 'payload.discussion.title'),
      fact('URL', 'payload.comment.html_url'),
      excerpt('payload.comment.body'),
    ],
  ),
  // Every other event, and the actions above not listed: 200, nothing stored.
  { id: 'github-other', match: { path: 'github' }, action: 'ignore' },
]);

/**
 * Example transform (TypeScript): a digest of a GitHub `pull_request` event.
 *
 * Mapping:
 *   - id: github-pr
 *     match: { path: github, when: { "==": [{ var: "headers.x-github-event" }, "pull_request"] } }
 *     sessionKey: "hook:github:{{keySegment payload.repository.full_name}}"
 *     transform: { module: github-pr-digest.ts }
 *
 * Opened, reopened and ready-for-review PRs become one agent run in the
 * repository's session (the mapping's sessionKey: a key the transform returned
 * would count as request-supplied); drafts and every other action are dropped
 * (null: 204).
 */

type PullRequestEvent = {
  action: string;
  number: number;
  pull_request: {
    title: string;
    body?: string | null;
    draft?: boolean;
    html_url: string;
    user: { login: string };
    additions?: number;
    deletions?: number;
    changed_files?: number;
    base: { ref: string };
    head: { ref: string };
  };
  repository: { id: number; full_name: string };
};

type Input = { payload: PullRequestEvent; headers: Record<string, string>; hook: string };

const INTERESTING = new Set(['opened', 'reopened', 'ready_for_review']);

function size(pr: PullRequestEvent['pull_request']): string {
  const changed = (pr.additions ?? 0) + (pr.deletions ?? 0);
  if (changed < 50) return 'small';
  return changed < 500 ? 'medium' : 'large';
}

export default function digest({ payload }: Input) {
  const pr = payload.pull_request;
  if (!INTERESTING.has(payload.action) || pr.draft) return null;
  const description = (pr.body ?? '').trim().slice(0, 1500) || '(no description)';
  return {
    name: 'GitHub',
    message: [
      `Pull request #${payload.number} ${payload.action} in ${payload.repository.full_name} by ${pr.user.login}:`,
      `"${pr.title}" (${pr.head.ref} -> ${pr.base.ref}, ${size(pr)}: +${pr.additions ?? 0}/-${pr.deletions ?? 0} in ${pr.changed_files ?? 0} files)`,
      pr.html_url,
      '',
      description,
      '',
      'Review it and summarise the risks in three bullet points.',
    ].join('\n'),
  };
}

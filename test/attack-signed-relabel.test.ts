/**
 * Attacks on signed routes, part three: the headers a signature does not
 * cover. GitHub signs the body alone, so `X-GitHub-Event` is the caller's
 * word; a delivery the preset ignored is not remembered, so its signed bytes
 * can be sent again under another event name. A body must speak for its own
 * event only. One test per attack, against a real server, and the whole
 * example corpus through the preset's selection.
 */
import { randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import type { Envelope } from '../engine/envelope.ts';
import { ruleData } from '../engine/mapped-route.ts';
import { compileMappings } from '../engine/mappings.ts';
import { policyFromConfig } from '../engine/policy.ts';
import { selectMapping } from '../engine/rules.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { githubEvents } from './helpers/provider-payloads.ts';
import { octokitExample, sendRaw, storedActions } from './helpers/signed-http.ts';

const SECRET = 'gh-relabel-secret-0123456789';

// The events the github preset turns into agent runs.
const WAKING = [
  'issues',
  'issue_comment',
  'pull_request',
  'pull_request_review',
  'push',
  'release',
  'workflow_run',
  'check_suite',
  'discussion',
  'discussion_comment',
];

describe('a captured ignored GitHub delivery resent under another X-GitHub-Event', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: { presets: ['github'], github: { auth: { secret: SECRET } } },
    });
  });
  afterAll(() => server.stop());

  async function deliver(event: string, body: string) {
    return sendRaw(server, 'github', body, {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': await sign(SECRET, body),
    });
  }

  it.each([
    ['ping', 'push', JSON.stringify(octokitExample('ping'))],
    [
      'pull_request_review_comment',
      'discussion',
      JSON.stringify(octokitExample('pull_request_review_comment', 'created')),
    ],
  ])('a signed %s delivery relabelled %s is still ignored', async (event, relabel, body) => {
    const first = await deliver(event, body);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ ok: true, ignored: expect.any(String) });
    // Same signed bytes, same signature; only the unsigned event header differs.
    const again = await deliver(relabel, body);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ok: true, ignored: expect.any(String) });
    expect(await storedActions(server)).toEqual([]);
  });
});

describe('every example body under every other event name the preset wakes for', () => {
  const { config } = resolveConfig(
    {
      hooks: {
        enabled: true,
        token: 't',
        presets: ['github'],
        github: { auth: { secret: SECRET } },
      },
    },
    { baseDir: '/tmp', env: {} },
  );
  const mappings = compileMappings(config, policyFromConfig(config), '/tmp/no-transforms-here');

  function selected(payload: Record<string, unknown>, event: string) {
    const envelope: Envelope = {
      id: randomUUID(),
      receivedAt: new Date().toISOString(),
      client: '127.0.0.1',
      method: 'POST',
      path: '/hooks/github',
      hook: 'github',
      headers: { 'x-github-event': event },
      query: {},
      raw: Buffer.from(JSON.stringify(payload)),
      payload,
      verification: { scheme: 'github', secretIndex: 0 },
    };
    return selectMapping(mappings, ruleData(envelope)).mapping;
  }

  it('selects only ignore mappings: a body speaks for its own event alone', () => {
    const woken: string[] = [];
    for (const c of githubEvents()) {
      for (const event of WAKING) {
        if (event === c.event) continue;
        const mapping = selected(c.payload, event);
        if (mapping?.kind !== 'ignore') woken.push(`${c.event} #${c.index} as ${event}`);
      }
    }
    expect(woken).toEqual([]);
  });
});

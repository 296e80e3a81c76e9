/**
 * End-to-end: where a signed request's provenance shows. `actions --json`
 * (the real binary over the store) prints each action's `verification`; a
 * command runner receives it as `origin.verification` in its request; and
 * `hookgate test` with a real delivery's headers says how it authenticated
 * and which replay key it has, or refuses it unsigned.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer, tempDir } from './helpers/hookgate.ts';
import { listStoredActions, runHookgate, writeConfig } from './helpers/process.ts';
import { agentRunner, readRecords, runnerInput, waitFor } from './helpers/runtime.ts';
import { octokitExample, sendRaw } from './helpers/signed-http.ts';

const NEW_SECRET = 'provenance-new-secret-2f3e4d5c';
const OLD_SECRET = 'provenance-old-secret-9a8b7c6d';
const example = octokitExample('issues', 'opened') as { issue: Record<string, unknown> };
const issue = JSON.stringify(example);
let serial = 0;

// Each delivery's body differs, as GitHub's do: a byte-identical signed body is a replay.
async function githubDelivery(secret: string, delivery = randomUUID()) {
  const body = JSON.stringify({
    ...example,
    issue: { ...example.issue, id: 7_000_000 + ++serial },
  });
  return {
    delivery,
    body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'issues',
      'x-github-delivery': delivery,
      'x-hub-signature-256': await sign(secret, body),
    },
  };
}

describe('provenance of a signed request', () => {
  const temp = tempDir();
  const record = path.join(temp.dir, 'agent-record.jsonl');
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(
      {
        agents: { list: [{ id: 'main', default: true, runner: agentRunner(record) }] },
        runtime: { heartbeat: { every: 'off' } },
        hooks: {
          presets: ['github'],
          github: { auth: { secrets: [NEW_SECRET, OLD_SECRET] }, deliver: false },
        },
      },
      { dataDir: temp.dir, runtime: true },
    );
  });
  afterAll(async () => {
    await server.stop();
    temp.cleanup();
  });

  const startOf = (runId: string) =>
    waitFor(`the agent to start ${runId}`, () =>
      readRecords(record).find((r) => r.runId === runId && r.phase === 'start'),
    );

  it('hands the runner origin.verification of a delivery signed with the previous secret', async () => {
    const { delivery, headers, body } = await githubDelivery(OLD_SECRET);
    const res = await sendRaw(server, 'github', body, headers);
    expect(res.status).toBe(200);
    const input = runnerInput(await startOf(String(res.body['runId'])));
    expect(input['origin']).toEqual({
      hook: 'github',
      mappingId: 'github-issues',
      untrusted: true,
      verification: { scheme: 'github', secretIndex: 1, deliveryId: delivery },
    });
  });

  it('hands the runner origin.verification scheme token for /agent', async () => {
    const res = await server.post('agent', { message: 'by token', deliver: false });
    expect(res.status).toBe(200);
    const { runId } = (await res.json()) as { runId: string };
    const input = runnerInput(await startOf(runId));
    expect(input['origin']).toMatchObject({ hook: 'agent', verification: { scheme: 'token' } });
  });

  it('actions --json prints the verification of each stored action', async () => {
    const { delivery, headers, body } = await githubDelivery(NEW_SECRET);
    const res = await sendRaw(server, 'github', body, headers);
    const runId = String(res.body['runId']);
    const printed = await listStoredActions(['--data-dir', temp.dir]);
    const line = printed.find((a) => a['id'] === runId);
    expect(line).toMatchObject({
      kind: 'agent',
      mappingId: 'github-issues',
      verification: { scheme: 'github', secretIndex: 0, deliveryId: delivery },
    });
  });
});

describe('hookgate test with a real delivery', () => {
  const temp = tempDir();
  afterAll(() => temp.cleanup());
  const config = writeConfig(
    temp.dir,
    [
      'hooks:',
      '  enabled: true',
      `  token: "${TOKEN}"`,
      '  presets: [github]',
      `  github: { auth: { secret: "${NEW_SECRET}" } }`,
    ].join('\n'),
  );
  const payload = path.join(temp.dir, 'issue.json');
  writeFileSync(payload, issue);

  const run = (headers: string[]) =>
    runHookgate([
      'test',
      'github',
      '--config',
      config,
      '--payload',
      payload,
      ...headers.flatMap((h) => ['--header', h]),
    ]);

  it('shows how a signed delivery authenticated and its replay key', async () => {
    const { delivery, headers, body } = await githubDelivery(NEW_SECRET);
    writeFileSync(payload, body);
    const result = await run([
      'x-github-event: issues',
      `x-github-delivery: ${delivery}`,
      `x-hub-signature-256: ${headers['x-hub-signature-256']}`,
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Authenticated: github, secret #0, delivery ${delivery}`);
    expect(result.stdout).toMatch(new RegExp(`Replay key: \\S*${delivery}`));
    expect(result.stdout).toContain('github-issues: matched');
  });

  it.each([
    ['without a signature', ['x-github-event: issues']],
    [
      'with a signature made by another secret',
      ['x-github-event: issues', `x-hub-signature-256: sha256=${'0'.repeat(64)}`],
    ],
  ])('refuses a delivery %s: 401, exit 1', async (_, headers) => {
    const result = await run(headers);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('Refused: 401 unauthorized');
    expect(result.stdout).not.toContain('Authenticated:');
  });
});

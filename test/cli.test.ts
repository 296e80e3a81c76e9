/**
 * End-to-end tests of the command line: the real `server.ts` process over
 * real HTTP on 127.0.0.1 (serve, config errors, config lookup, quickstart,
 * signals, the actions command).
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LISTENING,
  listStoredActions,
  postHook,
  runHookgate,
  type RunningServer,
  startServer,
  useProcessFixtures,
  writeConfig,
} from './helpers/process.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const temp = useProcessFixtures();

/** A valid config listening on port 0 with data in ./data next to the file. */
function validConfig(token: string, extra = ''): string {
  return `server:
  host: 127.0.0.1
  port: 0
hooks:
  enabled: true
  token: ${token}
runtime:
  dataDir: ./data
${extra}`;
}

/** The `error.code` of an error response. */
async function errorCode(res: Response): Promise<string> {
  return ((await res.json()) as { error: { code: string } }).error.code;
}

/** Send SIGTERM and expect a clean exit. */
async function stop(server: RunningServer): Promise<void> {
  server.child.kill('SIGTERM');
  const exit = await server.waitForExit();
  expect(exit).toEqual({ code: 0, signal: null });
}

describe('serve', () => {
  it('serve --port 0 prints the real port and answers a wake there', async () => {
    const dir = temp();
    // The file asks for 8787; the flag must win.
    const file = writeConfig(
      dir,
      validConfig('tok-listen-0123456789').replace('port: 0', 'port: 8787'),
    );
    const server = await startServer(['--config', file, '--port', '0']);
    const line = server
      .stdout()
      .split('\n')
      .find((l) => l.includes(`listening on http://127.0.0.1:${server.port}`));
    expect(line).toBeDefined();
    expect(server.port).toBeGreaterThan(0);
    expect(server.port).not.toBe(8787);

    const res = await postHook(
      server.url,
      'wake',
      { text: 'hello' },
      { token: 'tok-listen-0123456789' },
    );
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toEqual({ ok: true, id: expect.stringMatching(UUID), mode: 'now' });

    const anonymous = await postHook(server.url, 'wake', { text: 'hello' });
    expect(anonymous.status).toBe(401);
    await stop(server);
  });

  const configErrors: Array<{ name: string; yaml: string; expected: (file: string) => string[] }> =
    [
      {
        name: 'hooks.enabled without hooks.token',
        yaml: 'server: { host: 127.0.0.1, port: 0 }\nhooks:\n  enabled: true\n',
        expected: () => ['hooks.token: required when hooks.enabled is true'],
      },
      {
        name: 'hooks.token equal to gateway.token',
        yaml: validConfig('same-token-0123456789', 'gateway:\n  token: same-token-0123456789\n'),
        expected: () => ['hooks.token'],
      },
      {
        name: 'hooks.path "/"',
        yaml: validConfig('tok-path-0123456789').replace('hooks:\n', 'hooks:\n  path: /\n'),
        expected: () => ['hooks.path'],
      },
      {
        name: 'an unknown key',
        yaml: validConfig('tok-unknown-0123456789').replace('hooks:\n', 'hooks:\n  tokn: oops\n'),
        expected: () => ['hooks.tokn'],
      },
      {
        name: 'defaultSessionKey outside allowedSessionKeyPrefixes',
        yaml: validConfig('tok-dsk-0123456789').replace(
          'hooks:\n',
          'hooks:\n  defaultSessionKey: agent:main\n  allowedSessionKeyPrefixes: ["hook:"]\n',
        ),
        expected: () => ['hooks.defaultSessionKey'],
      },
      {
        name: 'prefixes that do not admit hook:<uuid> and no default key',
        yaml: validConfig('tok-prefix-0123456789').replace(
          'hooks:\n',
          'hooks:\n  allowedSessionKeyPrefixes: ["agent:"]\n',
        ),
        expected: () => ['hooks.allowedSessionKeyPrefixes'],
      },
      {
        name: 'duplicate agent ids',
        yaml: validConfig('tok-dup-0123456789', 'agents:\n  list: [{ id: main }, { id: main }]\n'),
        expected: () => ['agents.list.1.id'],
      },
      {
        name: 'two default agents',
        yaml: validConfig(
          'tok-def-0123456789',
          'agents:\n  list: [{ id: main, default: true }, { id: ops, default: true }]\n',
        ),
        expected: () => ['agents.list.1.default'],
      },
      {
        name: 'an unset ${VAR}',
        yaml: validConfig(`\${HOOKGATE_E2E_UNSET_${process.pid}}`),
        expected: () => ['hooks.token', `HOOKGATE_E2E_UNSET_${process.pid}`],
      },
      {
        name: 'invalid YAML',
        yaml: validConfig('tok-yaml-0123456789').replace('enabled: true', 'enabled: [true'),
        expected: (file) => [file],
      },
      {
        name: 'a channel name outside the allowed ids',
        yaml: validConfig('tok-chan-0123456789', 'channels:\n  email: {}\n'),
        expected: () => ['channels.email'],
      },
    ];

  it.each(configErrors)(
    'config error: $name exits 2 naming the path',
    async ({ yaml, expected }) => {
      const dir = temp();
      const file = writeConfig(dir, yaml);
      const result = await runHookgate(['serve', '--config', file], {
        env: { [`HOOKGATE_E2E_UNSET_${process.pid}`]: undefined },
        timeoutMs: 30_000,
      });
      expect(result.signal).toBeNull();
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('config error');
      for (const text of expected(file)) expect(result.stderr).toContain(text);
      // The service did not start, not even half-way.
      expect(result.stdout).not.toMatch(LISTENING);
      expect(existsSync(path.join(dir, 'data'))).toBe(false);
    },
  );

  it('substitutes ${VAR} and never logs the token', async () => {
    const dir = temp();
    const secret = `env-secret-${randomUUID()}`;
    const file = writeConfig(dir, validConfig('${HOOKGATE_E2E_TOKEN}'));
    const server = await startServer(['--config', file], { env: { HOOKGATE_E2E_TOKEN: secret } });

    const ok = await postHook(server.url, 'wake', { text: 'with env token' }, { token: secret });
    expect(ok.status).toBe(200);
    const viaHeader = await postHook(
      server.url,
      'agent',
      { message: 'with header token' },
      { headers: { 'x-hookgate-token': secret } },
    );
    expect(viaHeader.status).toBe(200);
    const wrong = await postHook(server.url, 'wake', { text: 'x' }, { token: `${secret}-wrong` });
    expect(wrong.status).toBe(401);
    expect(await errorCode(wrong)).toBe('unauthorized');
    const literal = await postHook(
      server.url,
      'wake',
      { text: 'x' },
      { token: '${HOOKGATE_E2E_TOKEN}' },
    );
    expect(literal.status).toBe(401);
    const inQuery = await fetch(`${server.url}/hooks/wake?token=${secret}`, {
      method: 'POST',
      body: JSON.stringify({ text: 'x' }),
    });
    expect(inQuery.status).toBe(400);
    expect(await errorCode(inQuery)).toBe('token_in_query');
    await stop(server);

    // The requests were logged (so the check below is not vacuous), the token never.
    const logged = server
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => entry['msg'] === 'request');
    expect(logged.map((entry) => entry['status']).sort()).toEqual([200, 200, 400, 401, 401]);
    expect(server.stdout()).not.toContain(secret);
    expect(server.stderr()).not.toContain(secret);
  });

  it.each([
    { winner: 'flag', flag: true, env: true, local: true },
    { winner: 'env', flag: false, env: true, local: true },
    { winner: 'local', flag: false, env: false, local: true },
  ] as const)(
    'config lookup: $winner wins (--config, HOOKGATE_CONFIG, ./hookgate.yaml)',
    async ({ winner, flag, env, local }) => {
      const dirs = { flag: temp(), env: temp(), local: temp() };
      const tokens = {
        flag: 'tok-from-flag-0123',
        env: 'tok-from-env-0123',
        local: 'tok-from-cwd-0123',
      };
      const files = {
        flag: writeConfig(dirs.flag, validConfig(tokens.flag), 'flag.yaml'),
        env: writeConfig(dirs.env, validConfig(tokens.env), 'env.yaml'),
        local: writeConfig(dirs.local, validConfig(tokens.local)),
      };
      const server = await startServer(flag ? ['--config', files.flag] : [], {
        cwd: local ? dirs.local : temp(),
        env: env ? { HOOKGATE_CONFIG: files.env } : {},
      });
      for (const source of ['flag', 'env', 'local'] as const) {
        const res = await postHook(server.url, 'wake', { text: source }, { token: tokens[source] });
        expect(res.status, `token of the ${source} config`).toBe(source === winner ? 200 : 401);
      }
      await stop(server);
      // runtime.dataDir is resolved from the chosen config file's directory.
      expect(existsSync(path.join(dirs[winner], 'data', 'hookgate.db'))).toBe(true);
      for (const source of ['flag', 'env', 'local'] as const) {
        if (source !== winner) expect(existsSync(path.join(dirs[source], 'data'))).toBe(false);
      }
    },
  );
});

describe('quickstart', () => {
  it('generates a token, prints it with a curl example that works, stores under ./data', async () => {
    const cwd = temp();
    const server = await startServer(['--port', '0'], { cwd });
    // The quickstart text follows the listening line.
    await server.waitForStdout(/curl .*\n/);
    const out = server.stdout();
    const curl = out.split('\n').find((line) => line.includes('curl '));
    expect(curl).toBeDefined();
    const match = (curl as string).match(
      /(http:\/\/127\.0\.0\.1:\d+\/hooks\/wake).*Authorization: Bearer ([^'"\s]+).*-d '([^']*)'/,
    );
    expect(match).not.toBeNull();
    const [, url, token, data] = match as RegExpMatchArray;
    expect(url).toBe(`${server.url}/hooks/wake`);
    expect((token as string).length).toBeGreaterThanOrEqual(16);
    // The token is printed on its own too, not only inside the example.
    expect(out.split('\n').filter((line) => line.includes(token as string)).length).toBeGreaterThan(
      1,
    );

    const res = await fetch(url as string, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: data as string,
    });
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    expect((await postHook(server.url, 'wake', { text: 'x' }, { token: 'not-it' })).status).toBe(
      401,
    );
    await stop(server);

    expect(existsSync(path.join(cwd, 'data', 'hookgate.db'))).toBe(true);
    const stored = await listStoredActions([], { cwd });
    expect(stored.map((action) => action['id'])).toEqual([id]);
  });

  it('uses HOOKGATE_TOKEN when set and does not print it', async () => {
    const cwd = temp();
    const token = `quick-env-${randomUUID()}`;
    const server = await startServer(['--port', '0'], { cwd, env: { HOOKGATE_TOKEN: token } });
    const ok = await postHook(server.url, 'wake', { text: 'hi' }, { token });
    expect(ok.status).toBe(200);
    const other = await postHook(server.url, 'wake', { text: 'hi' }, { token: 'something-else' });
    expect(other.status).toBe(401);
    await server.waitForStdout(/curl .*\n/);
    await stop(server);
    expect(server.stdout()).not.toContain(token);
    expect(server.stderr()).not.toContain(token);
    expect(existsSync(path.join(cwd, 'data', 'hookgate.db'))).toBe(true);
  });

  it.skipIf(!hasCurl())(
    'the printed curl example works as pasted into a shell with HOOKGATE_TOKEN set',
    async () => {
      const cwd = temp();
      const token = `quick-env-${randomUUID()}`;
      const server = await startServer(['--port', '0'], { cwd, env: { HOOKGATE_TOKEN: token } });
      await server.waitForStdout(/curl .*\n/);
      const curl = server
        .stdout()
        .split('\n')
        .find((line) => line.includes('curl '));
      const answer = await new Promise<string>((resolve, reject) =>
        execFile(
          'sh',
          ['-c', (curl as string).trim()],
          { env: { ...process.env, HOOKGATE_TOKEN: token } },
          (err, stdout) => (err ? reject(err) : resolve(stdout)),
        ),
      );
      await stop(server);
      expect(JSON.parse(answer)).toMatchObject({ ok: true });
    },
  );
});

function hasCurl(): boolean {
  try {
    execFileSync('curl', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Resolves once a new TCP connection to the port is refused (the server stopped accepting). */
async function waitUntilRefused(port: number, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', () => resolve(true));
    });
    if (refused) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`port ${port} still accepts connections after ${timeoutMs} ms`);
}

/**
 * POST a wake whose body arrives in two halves, with `signal` sent to the
 * server between them (once it stopped accepting new connections).
 */
function postAcrossSignal(
  server: RunningServer,
  signal: 'SIGTERM' | 'SIGINT',
  token: string,
  text: string,
  agent: Agent | false,
): Promise<{ status: number; body: string }> {
  const payload = Buffer.from(JSON.stringify({ text }));
  const half = Math.floor(payload.length / 2);
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port: server.port,
      method: 'POST',
      path: '/hooks/wake',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'content-length': String(payload.length),
        // The server answers 100 Continue when its handler has the request.
        expect: '100-continue',
      },
      timeout: 10_000,
      agent,
    });
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.on('continue', () => {
      req.write(payload.subarray(0, half));
      (async () => {
        // Half the body is in; now the signal, and wait until it took effect.
        await new Promise((r) => setTimeout(r, 50));
        server.child.kill(signal);
        try {
          await waitUntilRefused(server.port);
        } finally {
          req.end(payload.subarray(half));
        }
      })().catch(reject);
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
  });
}

describe('signals', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    '%s: finishes the in-flight request, then exits 0',
    async (signal) => {
      const dir = temp();
      const token = 'tok-signal-0123456789';
      const file = writeConfig(dir, validConfig(token));
      const server = await startServer(['--config', file]);

      const text = `in flight during ${signal}`;
      // agent false: Connection: close, the plainest client.
      const { status, body } = await postAcrossSignal(server, signal, token, text, false);
      expect(status).toBe(200);
      const { id } = JSON.parse(body) as { id: string };
      expect(id).toMatch(UUID);
      const exit = await server.waitForExit();
      expect(exit).toEqual({ code: 0, signal: null });

      const stored = await listStoredActions(['--data-dir', path.join(dir, 'data')]);
      expect(stored).toHaveLength(1);
      expect(stored[0]).toMatchObject({
        id,
        kind: 'wake',
        text: expect.stringContaining(text),
        // The runtime may already have turned the wake into a main-session event.
        state: expect.stringMatching(/^(queued|running|done)$/),
      });
    },
  );

  it.each(['SIGTERM', 'SIGINT'] as const)(
    '%s with a keep-alive client: no new request is accepted after the in-flight one, prompt exit',
    { timeout: 30_000 },
    async (signal) => {
      const dir = temp();
      const token = 'tok-signal-ka-0123456789';
      const file = writeConfig(dir, validConfig(token));
      const server = await startServer(['--config', file]);
      // Like fetch and most HTTP clients: one connection, kept alive and reused.
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const first = await postAcrossSignal(server, signal, token, 'in flight', agent);
        expect(first.status).toBe(200);
        const answeredAt = Date.now();

        // The service stopped accepting: a later request must not be taken in.
        const later = await new Promise<number | 'failed'>((resolve) => {
          const req = request(
            {
              host: '127.0.0.1',
              port: server.port,
              method: 'POST',
              path: '/hooks/wake',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              timeout: 5_000,
              agent,
            },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode ?? 0));
            },
          );
          req.on('timeout', () => req.destroy(new Error('timed out')));
          req.on('error', () => resolve('failed'));
          req.end(JSON.stringify({ text: 'sent after the signal' }));
        });
        expect(later).not.toBe(200);

        const exit = await server.waitForExit(15_000);
        expect(exit).toEqual({ code: 0, signal: null });
        // Not held open for keepAliveTimeoutMs (5 s) by the idle connection.
        expect(Date.now() - answeredAt).toBeLessThan(3_000);
        const stored = await listStoredActions(['--data-dir', path.join(dir, 'data')]);
        expect(stored).toHaveLength(1);
        expect(stored[0]?.['text']).toContain('in flight');
      } finally {
        agent.destroy();
      }
    },
  );
});

describe('actions', () => {
  const token = 'tok-actions-0123456789';
  let configDir: string;
  let configFile: string;
  let dataDir: string;
  let server: RunningServer;
  /** What was sent, oldest first, with the answers. */
  const sent: Array<{
    kind: 'wake' | 'agent';
    id: string;
    requestId: string;
    payload: Record<string, string>;
    response: Record<string, unknown>;
  }> = [];
  const longText = `${'A long wake text, line after line.\n'.repeat(120)}end of wake`;
  const longMessage = `${'Build 1234 failed: step "test" exited 1; see the log. '.repeat(100)}end of message`;

  beforeAll(async () => {
    configDir = temp();
    configFile = writeConfig(
      configDir,
      validConfig(token).replace('dataDir: ./data', 'dataDir: ./store'),
    );
    dataDir = path.join(configDir, 'store');
    // Started from another directory: ./store is relative to the config file.
    server = await startServer(['--config', configFile], { cwd: temp() });
    const requests: Array<{ kind: 'wake' | 'agent'; payload: Record<string, string> }> = [];
    for (let i = 0; i < 21; i++) requests.push({ kind: 'wake', payload: { text: `filler ${i}` } });
    requests.push(
      { kind: 'wake', payload: { text: 'short wake', mode: 'next-heartbeat' } },
      { kind: 'agent', payload: { message: 'short agent run', name: 'CI' } },
      { kind: 'wake', payload: { text: longText } },
      { kind: 'agent', payload: { message: longMessage } },
    );
    for (const { kind, payload } of requests) {
      const res = await postHook(server.url, kind, payload, { token });
      if (res.status !== 200) throw new Error(`setup request answered ${res.status}`);
      const response = (await res.json()) as Record<string, unknown>;
      const id = (kind === 'wake' ? response['id'] : response['runId']) as string;
      sent.push({
        kind,
        id,
        requestId: res.headers.get('x-request-id') as string,
        payload,
        response,
      });
    }
  });

  afterAll(async () => {
    server.child.kill('SIGTERM');
    await server.waitForExit();
  });

  /** The complete action expected for one sent request. */
  function expectedAction(item: (typeof sent)[number]): Record<string, unknown> {
    const origin = {
      id: item.id,
      hook: item.kind,
      receivedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      client: '127.0.0.1',
      requestId: item.requestId,
      untrusted: true,
      // Without a runner the runtime finishes wakes (done) and agent runs (failed) at once.
      state: expect.stringMatching(/^(queued|running|done|failed)$/),
      attempts: expect.any(Number),
    };
    if (item.kind === 'wake') {
      return {
        kind: 'wake',
        ...origin,
        text: expect.stringContaining(item.payload['text'] as string),
        mode: item.payload['mode'] ?? 'now',
      };
    }
    return {
      kind: 'agent',
      ...origin,
      message: expect.stringContaining(item.payload['message'] as string),
      name: item.payload['name'] ?? 'Hook',
      agentId: item.response['agentId'],
      sessionKey: item.response['sessionKey'],
      sessionKeySource: expect.any(String),
      wakeMode: 'now',
      deliver: true,
      channel: 'last',
    };
  }

  it('lists actions newest first as text; 20 by default', async () => {
    const all = await runHookgate(['actions', '--data-dir', dataDir, '--limit', '100']);
    expect(all.code).toBe(0);
    const lines = all.stdout.split('\n').filter((line) => line.trim() !== '');
    expect(lines).toHaveLength(sent.length);
    const newestFirst = [...sent].reverse();
    lines.forEach((line, i) => {
      expect(line).toContain(newestFirst[i]?.id);
    });

    const byDefault = await runHookgate(['actions', '--data-dir', dataDir]);
    expect(byDefault.code).toBe(0);
    const defaultLines = byDefault.stdout.split('\n').filter((line) => line.trim() !== '');
    expect(defaultLines).toHaveLength(20);
    expect(defaultLines[0]).toContain(sent[sent.length - 1]?.id);
  });

  it.each([1, 4, 25])('--json --limit %i prints that many complete actions', async (limit) => {
    const stored = await listStoredActions(['--limit', String(limit), '--data-dir', dataDir]);
    expect(stored).toHaveLength(limit);
    const expected = [...sent].reverse().slice(0, limit).map(expectedAction);
    // Every field of the action is there (later stages may add more, e.g. safety).
    expect(stored).toMatchObject(expected);
  });

  it('--json keeps long texts whole', async () => {
    const stored = await listStoredActions(['--limit', '2', '--data-dir', dataDir]);
    expect(stored[0]?.['message']).toContain(longMessage);
    expect(stored[1]?.['text']).toContain(longText);
  });

  it.each([
    { how: '--config FILE', args: () => ['--config', configFile], env: {}, inConfigDir: false },
    { how: 'HOOKGATE_CONFIG', args: () => [], env: 'config', inConfigDir: false },
    { how: './hookgate.yaml in the cwd', args: () => [], env: {}, inConfigDir: true },
  ] as const)('finds the data dir from the config ($how)', async ({ args, env, inConfigDir }) => {
    const stored = await listStoredActions(['--limit', '100', ...args()], {
      cwd: inConfigDir ? configDir : temp(),
      env: env === 'config' ? { HOOKGATE_CONFIG: configFile } : {},
    });
    expect(stored.map((action) => action['id'])).toEqual([...sent].reverse().map((s) => s.id));
  });

  it('an empty data dir: a clear message, exit 0', async () => {
    const dir = temp();
    const result = await runHookgate(['actions', '--data-dir', dir]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/no actions/i);
    expect(result.stdout).toContain(dir);
  });

  it('a --data-dir that does not exist (a typo): exit 2 naming it, nothing created', async () => {
    const dir = path.join(temp(), 'nowhere');
    const result = await runHookgate(['actions', '--data-dir', dir]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--data-dir ${dir}: no such directory`);
    expect(existsSync(dir)).toBe(false);
  });
});

describe('actions to a slow reader', () => {
  it('--json prints every long text whole when stdout is a pipe read slowly', async () => {
    const dir = temp();
    const token = 'tok-slow-reader-0123456789';
    const file = writeConfig(dir, validConfig(token));
    const server = await startServer(['--config', file]);
    const sentIds: string[] = [];
    const texts: string[] = [];
    for (let i = 0; i < 4; i++) {
      const text = `${String(i).repeat(100_000)} end ${i}`;
      const res = await postHook(server.url, 'wake', { text }, { token });
      expect(res.status).toBe(200);
      sentIds.push(((await res.json()) as { id: string }).id);
      texts.push(text);
    }
    await stop(server);

    // Like `hookgate actions --json | jq`: 400 KB of output, a reader not always ready.
    const result = await runHookgate(['actions', '--json', '--data-dir', path.join(dir, 'data')], {
      slowReaderMs: 1_000,
    });
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n').filter((line) => line !== '');
    expect(lines).toHaveLength(4);
    const actions = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(actions.map((action) => action['id'])).toEqual([...sentIds].reverse());
    expect(actions.map((action) => action['text'])).toEqual(
      [...texts].reverse().map((text) => expect.stringContaining(text)),
    );
  });
});

describe('usage', () => {
  it.each([
    { args: ['frobnicate'], mentions: 'frobnicate' },
    { args: ['serve', '--bogus'], mentions: '--bogus' },
    { args: ['actions', '--bogus'], mentions: '--bogus' },
    // Read as a flag without its value, not as a limit the command refuses (which is 2 too).
    { args: ['runs', '--limit', '-1'], mentions: '--limit' },
  ])('$args exits 2 with usage', async ({ args, mentions }) => {
    const result = await runHookgate(args, { cwd: temp(), timeoutMs: 30_000 });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/usage/i);
    expect(result.stderr).toContain(mentions);
    expect(result.stdout).not.toMatch(LISTENING);
  });
});

/**
 * The `hookgate` bin on an older system Node starts the pinned Node 24 as a
 * child: the server's signals must reach that child. SIGHUP (reload) ended
 * the launcher and left the server running, orphaned and not reloaded.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { LISTENING, ROOT } from './helpers/process.ts';
import { waitFor } from './helpers/runtime.ts';

/** A system Node older than 24.16, which makes the bin start Node 24 as a child. */
function olderSystemNode(): string | undefined {
  const node = '/usr/bin/node';
  if (!existsSync(node)) return undefined;
  const [major = 0, minor = 0] = execFileSync(node, ['-p', 'process.versions.node'], {
    encoding: 'utf8',
  })
    .trim()
    .split('.')
    .map(Number);
  return major < 24 || (major === 24 && minor < 16) ? node : undefined;
}

const OLDER_NODE = olderSystemNode();
if (!OLDER_NODE)
  console.log('bin-signals: skipped, no system Node older than 24.16 at /usr/bin/node');

const config = (hooks: string[]) => `server: { host: 127.0.0.1, port: 0 }
hooks:
  enabled: true
  token: ${TOKEN}
  mappings:
${hooks.map((hook) => `    - { id: ${hook}, match: { path: ${hook} }, action: wake, text: "${hook}" }`).join('\n')}
runtime: { dataDir: ./data, heartbeat: { every: "off" } }
`;

/** Pids of the children of `pid`. */
function childrenOf(pid: number): number[] {
  const tasks = `/proc/${pid}/task`;
  if (!existsSync(tasks)) return [];
  return execFileSync('ls', [tasks], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .flatMap((task) => readFileSync(path.join(tasks, task, 'children'), 'utf8').split(' '))
    .filter(Boolean)
    .map(Number);
}

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** Start the bin on the older Node over `file`; its output, exit and cleanup are tracked. */
function startBin(file: string, cwd: string) {
  const bin = spawn(
    OLDER_NODE as string,
    [path.join(ROOT, 'bin/hookgate.js'), 'serve', '--config', file],
    { cwd, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const seen = { out: '' };
  bin.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    seen.out += chunk;
  });
  const exited = new Promise((resolve) => bin.on('exit', resolve));
  const servers: number[] = [];
  cleanups.push(() => {
    // Read before the launcher goes: an orphaned server is no longer its child.
    const left = [...servers, ...childrenOf(bin.pid as number)];
    bin.kill('SIGKILL');
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
  });
  return { bin, seen, exited, servers };
}

/** The bin started over a fresh data dir holding `text` as its config file. */
function startBinOver(text: string) {
  const temp = tempDir('hookgate-bin-');
  cleanups.push(temp.cleanup);
  const file = path.join(temp.dir, 'hookgate.yaml');
  writeFileSync(file, text);
  return { file, ...startBin(file, temp.dir) };
}

/** The status of a POST `{}` to a hook with the token. */
function postStatus(url: string, hook: string): Promise<number> {
  return fetch(`${url}/hooks/${hook}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: '{}',
  }).then((res) => res.status);
}

describe.skipIf(!OLDER_NODE)('the hookgate bin on an older Node', () => {
  it('SIGHUP to the bin reloads the server it started, and the bin stays up', async () => {
    const { file, bin, seen, exited, servers } = startBinOver(config(['ci']));
    const url = await waitFor(
      'the listening line',
      async () => LISTENING.exec(seen.out)?.[1],
      30_000,
    );
    servers.push(...childrenOf(bin.pid as number));
    expect(servers).toHaveLength(1);
    const post = (hook: string) => postStatus(url, hook);
    expect(await post('cd')).toBe(404);

    writeFileSync(file, config(['ci', 'cd']));
    bin.kill('SIGHUP');
    await waitFor('the new mapping', async () => (await post('cd')) === 200 || undefined, 20_000);
    expect(bin.exitCode).toBeNull();

    bin.kill('SIGTERM');
    await exited;
    await waitFor(
      'the server to stop',
      async () => !existsSync(`/proc/${servers[0]}`) || undefined,
      20_000,
    );
  });

  it('a SIGHUP while the server it started is still booting is kept until the server can take it', async () => {
    const { file, bin, seen, exited, servers } = startBinOver(config(['ci']));
    // The Node 24 child exists, and is in Node's own boot: before it, a SIGHUP passed on at once
    // ended it (Node's default action), and the launcher with it.
    servers.push(
      ...(await waitFor('the server process', () => {
        const children = childrenOf(bin.pid as number);
        return children.length > 0 && children;
      })),
    );
    writeFileSync(file, config(['ci', 'cd']));
    bin.kill('SIGHUP');
    const url = await waitFor(
      'the listening line',
      async () => LISTENING.exec(seen.out)?.[1],
      30_000,
    );
    const post = (hook: string) => postStatus(url, hook);
    await waitFor('the new mapping', async () => (await post('cd')) === 200 || undefined, 20_000);
    // The SIGHUP itself was done once the server listened (the file may also have been read new
    // at the start): its reload is in the log.
    await waitFor('the held reload', () => /"msg":"reloaded/.test(seen.out), 20_000);
    expect(bin.exitCode).toBeNull();
    expect(childrenOf(bin.pid as number)).toEqual(servers);

    bin.kill('SIGTERM');
    await exited;
  });
});

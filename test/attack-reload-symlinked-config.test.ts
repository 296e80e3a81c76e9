/**
 * reload.watch with a config file that is a symlink, as a Kubernetes ConfigMap mounts it:
 * `hookgate.yaml -> ..data/hookgate.yaml`, `..data -> ..<timestamp>`. An update writes a new
 * timestamped directory and renames a new `..data` link over the old one; no event names
 * `hookgate.yaml`, so the watch, filtering the directory's events by that name, never
 * reloaded. An event for any other entry now counts when it changed what the config path opens.
 */
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { TOKEN } from './helpers/hookgate.ts';
import { killAll, listStoredActions, startServer, tempDir } from './helpers/process.ts';
import { waitFor } from './helpers/runtime.ts';
import { ciWakeConfig } from './helpers/reload-config.ts';

afterAll(killAll);

function configText(greeting: string): string {
  return ciWakeConfig(
    `${greeting}: {{payload.build}}`,
    'reload: { watch: true, debounceMs: 50 }\n',
  );
}

/** Write one version of the mounted volume: its own directory, its file inside. */
function writeVersion(dir: string, version: string, greeting: string): void {
  mkdirSync(path.join(dir, version));
  writeFileSync(path.join(dir, version, 'hookgate.yaml'), configText(greeting));
}

it('a ConfigMap-style swap of the ..data link reloads the configuration', async () => {
  const { dir, cleanup } = tempDir();
  try {
    writeVersion(dir, '..2024_01_01_v1', 'first');
    symlinkSync('..2024_01_01_v1', path.join(dir, '..data'));
    symlinkSync('..data/hookgate.yaml', path.join(dir, 'hookgate.yaml'));
    const server = await startServer(['--config', path.join(dir, 'hookgate.yaml')], { cwd: dir });
    const post = async (build: string) => {
      const answer = await fetch(`${server.url}/hooks/ci`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ build }),
      });
      expect(answer.status).toBe(200);
      const [newest] = await listStoredActions(['--data-dir', path.join(dir, 'data')]);
      return String(newest?.['text'] ?? '');
    };
    expect(await post('1')).toContain('first: 1');
    // The kubelet's update: a new version beside the old, then one rename of a new link.
    writeVersion(dir, '..2024_01_02_v2', 'second');
    symlinkSync('..2024_01_02_v2', path.join(dir, '..data_tmp'));
    renameSync(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
    await waitFor('the reload', () => /"reloaded"/.test(server.stdout()));
    expect(await post('2')).toContain('second: 2');
  } finally {
    cleanup();
  }
});

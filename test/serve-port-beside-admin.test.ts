/**
 * A --port given at start is held to the config's rule for admin.port: the same port as the
 * admin listener on the same host is refused, on another host it is the operator's choice (the
 * check once compared the port alone, and refused 127.0.0.2:P beside the admin's 127.0.0.1:P).
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { loadConfigFile } from '../engine/config.ts';
import { startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import { tempDir } from './helpers/process.ts';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

function loaded(adminPort: number) {
  const temp = tempDir('hookgate-port-beside-admin-');
  cleanups.push(temp.cleanup);
  const file = path.join(temp.dir, 'hookgate.yaml');
  writeFileSync(
    file,
    [
      'hooks: { enabled: true, token: port-beside-token-0123456789abcdef }',
      `admin: { host: 127.0.0.1, port: ${adminPort}, token: admin-beside-token-0123456789abcdef }`,
      'runtime: { dataDir: ./data, heartbeat: { every: "off" } }',
      '',
    ].join('\n'),
  );
  return loadConfigFile(file, {});
}

const options = { logger: createLogger('silent'), runtime: false, env: {} } as const;

it("--port of the admin listener's port on another host starts, and the hooks answer there", async () => {
  const port = await freePort();
  const hookgate = await startHookgate(loaded(port), { ...options, host: '127.0.0.2', port });
  cleanups.push(() => hookgate.close());
  expect(hookgate.url).toBe(`http://127.0.0.2:${port}`);
  const res = await fetch(`${hookgate.url}/hooks/wake`, {
    method: 'POST',
    headers: { authorization: 'Bearer wrong-token', 'content-type': 'application/json' },
    body: '{"text":"x"}',
  });
  expect(res.status).toBe(401);
});

it("--port of the admin listener's port on its host is refused, naming admin.port", async () => {
  const port = await freePort();
  await expect(
    startHookgate(loaded(port), { ...options, host: '127.0.0.1', port }),
  ).rejects.toThrow(`port ${port} is the admin listener's (admin.port)`);
});

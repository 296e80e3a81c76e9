#!/usr/bin/env node
// Launcher for the `hookgate` bin: hookgate needs Node 24.16 or later (type
// stripping, crypto.randomUUIDv7). On an older system node it re-runs server.ts
// with the Node 24 binary of the pinned `node` dev dependency; on a recent
// enough Node it runs it in this process.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const server = fileURLToPath(new URL('../server.ts', import.meta.url));
const [major, minor] = process.versions.node.split('.').map(Number);

if (major > 24 || (major === 24 && minor >= 16)) {
  await import(server);
} else {
  let node;
  try {
    node = createRequire(import.meta.url).resolve('node/bin/node');
  } catch {
    process.stderr.write(
      'hookgate: Node.js 24.16 or later is required; run `npm install` or use Node 24 (.nvmrc).\n',
    );
    process.exit(1);
  }
  // The signals are handled from before the child exists: one that came between the spawn and
  // its handlers took its default action, and a SIGHUP then ended this launcher (the server
  // started was left without it). Handlers run on the event loop, once `child` is set.
  let child;
  // The server's own signals go to it: stop (SIGINT, SIGTERM) and reload (SIGHUP, which would
  // otherwise end this launcher and leave the server running without it).
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  // A SIGHUP during the child's boot, before it handles SIGHUP itself, would end it: one is
  // kept until the child says it booted (or drops its channel without saying so).
  let booted = false;
  let heldHangUp = false;
  process.on('SIGHUP', () => {
    if (booted) child.kill('SIGHUP');
    else heldHangUp = true;
  });
  child = spawn(node, [server, ...process.argv.slice(2)], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    // Says the channel is this launcher's: another parent's (pm2, a fork) is never written to.
    env: { ...process.env, HOOKGATE_LAUNCHER: '1' },
  });
  const boot = () => {
    if (booted) return;
    booted = true;
    if (heldHangUp) child.kill('SIGHUP');
  };
  child.on('message', (message) => {
    if (message === 'hookgate:booted') boot();
  });
  child.on('disconnect', boot);
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

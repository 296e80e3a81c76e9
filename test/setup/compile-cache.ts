/**
 * The suite spawns hundreds of hookgate processes (CLI commands, servers,
 * transform processes), each compiling the same modules. Node's compile cache,
 * in a directory private to this run, roughly halves their start-up. It is
 * set up here for the tests only: a cache another local user could write to
 * would be code run by the service.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export default function setup(): () => void {
  // mkdtemp creates the directory 0700.
  const dir = mkdtempSync(path.join(tmpdir(), 'hookgate-test-compile-cache-'));
  process.env['NODE_COMPILE_CACHE'] = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}

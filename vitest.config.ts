import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

// Forks, not threads: isolated-vm (later) needs --no-node-snapshot, and the
// end-to-end tests spawn and kill real server processes.
const shared: TestProjectInlineConfiguration['test'] = {
  globalSetup: ['test/setup/compile-cache.ts'],
  pool: 'forks',
  execArgv: ['--no-node-snapshot'],
  // Bounds for hangs only, never timing assertions: on a loaded 2-core
  // machine a test that spawns several Node processes can take a while.
  testTimeout: 60_000,
  hookTimeout: 60_000,
};

// Files that leave something behind in their process for its whole life, which a later file
// in the same worker would see (modules are not reloaded between files). recheck's synchronous
// check keeps its native agent running. A file that fakes timers can leave a library's
// module-wide timer (undici's) a fake one that never fires, and a module mock would outlive its
// file: such files are found by what they call, so a new one cannot be missed.
const ROOT = import.meta.dirname;
const SHARES_BADLY = /\bvi\.(?:useFakeTimers|mock)\(/;
const OWN_PROCESS = [
  'test/regex-linear.test.ts',
  ...readdirSync(path.join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => path.join('test', file))
    .filter((file) => SHARES_BADLY.test(readFileSync(path.join(ROOT, file), 'utf8'))),
];

export default defineConfig({
  test: {
    // More files than cores: the default (one fewer than the cores) runs the files one at a
    // time here, and most of the suite waits on child processes and sockets rather than
    // computing (on a slow day of this 2-core machine: 552-556 s with 2, 481 s with 3).
    maxWorkers: 3,
    projects: [
      {
        // One worker process runs many files: a process and its module imports per file cost
        // about 2.8 s on this machine, over 300 files (on a slow day: 842 s with a process per
        // file, 553 s shared). Every file closes what it opens and restores what it changes;
        // one that cannot goes to OWN_PROCESS.
        test: {
          ...shared,
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: OWN_PROCESS,
          isolate: false,
        },
      },
      { test: { ...shared, name: 'own-process', include: OWN_PROCESS } },
    ],
  },
});

import { defineConfig } from 'vitest/config';

// Forks, not threads: isolated-vm (later) needs --no-node-snapshot, and the
// end-to-end tests spawn and kill real server processes.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/setup/compile-cache.ts'],
    pool: 'forks',
    execArgv: ['--no-node-snapshot'],
    // Bounds for hangs only, never timing assertions: on a loaded 2-core
    // machine a test that spawns several Node processes can take a while.
    testTimeout: 60_000,
    // More files than cores: the default (one fewer than the cores) runs the files one at a
    // time here, and most of the suite waits on child processes and sockets rather than
    // computing (on a slow day of this 2-core machine: 552-556 s with 2, 481 s with 3).
    maxWorkers: 3,
    hookTimeout: 60_000,
  },
});

import { defineConfig } from 'vitest/config';

// Forks, not threads: isolated-vm (later) needs --no-node-snapshot, and the
// end-to-end tests spawn and kill real server processes.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    execArgv: ['--no-node-snapshot'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});

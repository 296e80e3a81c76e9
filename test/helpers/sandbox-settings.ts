/** Supervisor settings for tests that drive transform processes directly: small and quick. */
export const SANDBOX_SETTINGS = {
  cpuTimeoutMs: 100,
  deadlineMs: 1500,
  memoryLimitMb: 32,
  maxOutputBytes: 262_144,
  recycleAfterCalls: 10_000,
  recycleAboveHeapMb: 48,
  consoleLinesPerMinute: 5,
};

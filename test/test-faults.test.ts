/**
 * The test-only fault switch (HOOKGATE_TEST_FAULTS) of the kill test's
 * negative controls: names it knows are read, and a misspelt one stops
 * hookgate at start instead of silently testing nothing.
 */
import { describe, expect, it } from 'vitest';
import { parseTestFaults } from '../engine/faults.ts';
import { runHookgate } from './helpers/process.ts';

describe('HOOKGATE_TEST_FAULTS', () => {
  it('is empty when unset and reads a comma-separated list', () => {
    expect([...parseTestFaults(undefined)]).toEqual([]);
    expect([...parseTestFaults(' ack-before-commit , claim-without-head-rule,')]).toEqual([
      'ack-before-commit',
      'claim-without-head-rule',
    ]);
  });

  it('refuses a name it does not know, naming the ones it does', () => {
    expect(() => parseTestFaults('ack-before-comit')).toThrow(
      'HOOKGATE_TEST_FAULTS names an unknown fault "ack-before-comit" (known: ack-before-commit, claim-without-head-rule)',
    );
  });

  it('stops hookgate at start when it names an unknown fault', async () => {
    const result = await runHookgate(['serve', '--port', '0'], {
      env: { HOOKGATE_TEST_FAULTS: 'no-such-fault' },
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('unknown fault "no-such-fault"');
    expect(result.stdout).not.toContain('listening');
  });
});

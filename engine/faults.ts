/**
 * Faults a test switches on through HOOKGATE_TEST_FAULTS (a comma-separated list) to break a
 * guarantee on purpose: the kill test's negative controls, which show that its checker does
 * catch lost acknowledgements and broken session order. Nothing but those two places reads
 * this set: `ack-before-commit` (the ledger's commit answers without waiting for the store)
 * and `claim-without-head-rule` (the PostgreSQL claim takes any due queued action). An
 * unknown name is refused when hookgate starts, so a typo never silently tests nothing.
 */
const KNOWN = ['ack-before-commit', 'claim-without-head-rule'] as const;

export type TestFault = (typeof KNOWN)[number];

/** The faults named in `value` (empty when unset); throws on a name it does not know. */
export function parseTestFaults(value: string | undefined): ReadonlySet<TestFault> {
  const names = (value ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  for (const name of names) {
    if (!(KNOWN as readonly string[]).includes(name)) {
      throw new Error(
        `HOOKGATE_TEST_FAULTS names an unknown fault "${name}" (known: ${KNOWN.join(', ')})`,
      );
    }
  }
  return Object.freeze(new Set(names as TestFault[]));
}

/** The faults this process runs with (never set outside tests). */
export const testFaults: ReadonlySet<TestFault> = parseTestFaults(
  process.env['HOOKGATE_TEST_FAULTS'],
);

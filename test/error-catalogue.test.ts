/**
 * The error catalogue, the README's error table and the codes the code can
 * throw stay in step.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERRORS, HookError } from '../engine/errors.ts';
import { rateLimited } from '../engine/ingress/admit.ts';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** Rows `| \`code\` | status | ... |` of the README's Errors table. */
function readmeRows(): Map<string, number> {
  const section = readme.split('### Errors')[1]?.split('\n## ')[0] ?? '';
  const rows = new Map<string, number>();
  for (const match of section.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)) {
    rows.set(match[1] as string, Number(match[2]));
  }
  return rows;
}

describe('error catalogue', () => {
  it('matches the README table code for code and status for status', () => {
    const catalogue = new Map(Object.entries(ERRORS).map(([code, { status }]) => [code, status]));
    expect(readmeRows()).toEqual(catalogue);
  });

  it('renders the documented body shape', () => {
    const error = new HookError('rate_limited', undefined, { headers: { 'retry-after': '5' } });
    expect(error.status).toBe(429);
    expect(error.toBody()).toEqual({
      ok: false,
      error: { code: 'rate_limited', message: ERRORS.rate_limited.message },
    });
  });

  it('captures no stack (a refusal is an answer, not a fault) and leaves the stack limit as it was', () => {
    const limit = Error.stackTraceLimit;
    const error = new HookError('invalid_payload', 'a refusal built per request');
    expect(error.stack ?? '').not.toMatch(/\n\s+at /);
    expect(Error.stackTraceLimit).toBe(limit);
    // Other errors keep their stacks.
    expect(new Error('a fault').stack).toMatch(/\n\s+at /);
  });

  it('says each lock its own seconds (the last 429 is reused only for the same seconds)', () => {
    const header = (seconds: number) => rateLimited(seconds).flatHeaders();
    expect(header(5)).toEqual(['retry-after', '5']);
    expect(rateLimited(5)).toBe(rateLimited(5));
    expect(header(7)).toEqual(['retry-after', '7']);
    expect(header(5)).toEqual(['retry-after', '5']);
  });

  it('is frozen', () => {
    expect(Object.isFrozen(ERRORS)).toBe(true);
  });
});

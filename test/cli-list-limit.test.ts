/**
 * A listing command's --limit (`actions`, `runs`, `events`, `heartbeats`):
 * digits only, so the spellings Number() would also take (exponents, hex,
 * blanks, a minus) are refused with the command's own message, not passed
 * on to the store (where -1 listed everything).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listLimit } from '../engine/cli/list-actions.ts';

describe('listLimit', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('is 20 when absent, and the number given when it is a positive integer', () => {
    expect(listLimit('runs', undefined)).toBe(20);
    expect(listLimit('runs', '1')).toBe(1);
    expect(listLimit('runs', '250')).toBe(250);
  });

  it.each(['-1', '0', '2.5', 'ten', '1e20', '0x2', '', ' 5', '5 ', '99999999999999999999'])(
    'refuses %j, saying why on stderr',
    (raw) => {
      const said: string[] = [];
      vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
        said.push(String(chunk));
        return true;
      });
      expect(listLimit('events', raw)).toBeUndefined();
      expect(said).toEqual(['hookgate events: --limit must be a positive integer\n']);
    },
  );
});

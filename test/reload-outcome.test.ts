/**
 * What `hookgate reload` reads from the server's stored answer: the outcome as the server
 * writes it, and nothing from a row it could not have written (it was printed half and then
 * failed on a missing field, or thrown as a parse error).
 */
import { describe, expect, it } from 'vitest';
import { readOutcome } from '../engine/cli/reload.ts';

describe('reload: the stored outcome', () => {
  it('reads what the server writes', () => {
    const written = {
      ok: true,
      at: '2026-11-30T12:00:00.000Z',
      trigger: 'hookgate reload',
      file: '/etc/hookgate.yaml',
      restartNeeded: ['server.port'],
      warnings: ['a runner command is missing'],
    };
    expect(readOutcome(JSON.stringify(written))).toEqual(written);
    const failed = { ...written, ok: false, file: null, error: 'bad', restartNeeded: [] };
    expect(readOutcome(JSON.stringify(failed))).toEqual(failed);
  });

  it('reads nothing from a row the server could not have written', () => {
    for (const row of [
      'not json',
      'null',
      '[]',
      '{"ok":true}',
      '{"ok":"yes","file":null,"restartNeeded":[]}',
      '{"ok":true,"file":null,"restartNeeded":[1]}',
      '{"ok":true,"file":null,"restartNeeded":[],"warnings":"x"}',
      '{"ok":false,"file":3,"restartNeeded":[]}',
      '{"ok":false,"file":null,"restartNeeded":[],"error":{}}',
    ])
      expect(readOutcome(row), row).toBeUndefined();
  });
});

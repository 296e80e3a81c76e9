/**
 * The stage runner's contract: stages run in order until one answers or
 * refuses; what settles without waiting comes back as a value (no promise),
 * a stage that waits makes the outcome a promise, a thrown refusal throws
 * or rejects.
 */
import { describe, expect, it } from 'vitest';
import { HookError } from '../engine/errors.ts';
import {
  type Answer,
  type Exchange,
  type NamedStage,
  newExchange,
  runStages,
  type Stage,
} from '../engine/ingress/exchange.ts';
import { headerValues } from '../engine/ingress/request-source.ts';

function exchange(): Exchange {
  return newExchange(
    {
      method: 'POST',
      url: '/hooks/wake',
      headers: {},
      rawHeaders: [],
      remoteAddress: '127.0.0.1',
      readBody: () => Promise.resolve(Buffer.alloc(0)),
    },
    headerValues([]),
  );
}

const OK: Answer = { kind: 'json', status: 200, body: '{"ok":true}' };

/** Stages under fixed names, recording which ran. */
function stages(ran: string[], ...runs: Stage[]): NamedStage[] {
  const names = ['admit', 'pickRoute', 'authenticateHeaders', 'readBody', 'commit'] as const;
  return runs.map((run, i) => {
    const name = names[i] as NamedStage['name'];
    const recorded: Stage = (x) => {
      ran.push(name);
      return run(x);
    };
    return { name, run: recorded };
  });
}

const pass: Stage = () => undefined;

describe('the stage runner', () => {
  it('a refusal returned before any stage waits comes back as a value, and later stages do not run', () => {
    const ran: string[] = [];
    const refusal = new HookError('unauthorized');
    const outcome = runStages(
      stages(
        ran,
        pass,
        () => refusal,
        () => OK,
      ),
      exchange(),
    );
    expect(outcome).toBe(refusal);
    expect(ran).toEqual(['admit', 'pickRoute']);
  });

  it('an answer from synchronous stages is a value too', () => {
    expect(
      runStages(
        stages([], pass, () => OK),
        exchange(),
      ),
    ).toBe(OK);
  });

  it('a stage that waits makes the outcome a promise, and the stages after it run when it settles', async () => {
    const ran: string[] = [];
    const outcome = runStages(
      stages(
        ran,
        pass,
        () => Promise.resolve(undefined),
        pass,
        () => OK,
      ),
      exchange(),
    );
    expect(outcome).toBeInstanceOf(Promise);
    expect(ran).toEqual(['admit', 'pickRoute']);
    expect(await outcome).toBe(OK);
    expect(ran).toEqual(['admit', 'pickRoute', 'authenticateHeaders', 'readBody']);
  });

  it('a refusal a waiting stage resolves with ends the run', async () => {
    const ran: string[] = [];
    const refusal = new HookError('payload_too_large');
    const outcome = runStages(
      stages(
        ran,
        () => Promise.resolve(refusal),
        () => OK,
      ),
      exchange(),
    );
    expect(await outcome).toBe(refusal);
    expect(ran).toEqual(['admit']);
  });

  it('a thrown refusal throws before any wait, and rejects after one', async () => {
    const refusal = new HookError('not_found');
    const thrown: Stage = () => {
      throw refusal;
    };
    expect(() => runStages(stages([], pass, thrown), exchange())).toThrow(refusal);
    await expect(
      runStages(
        stages([], () => Promise.resolve(undefined), thrown),
        exchange(),
      ),
    ).rejects.toBe(refusal);
  });

  it('stages that all pass are a bug in the stage list, not an answer', () => {
    expect(() => runStages(stages([], pass, pass), exchange())).toThrow(/without an answer/);
  });
});

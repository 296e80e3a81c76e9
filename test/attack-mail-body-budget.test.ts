/**
 * A mail body allowed by hooks.gmail.maxBytes but past what a mapping may
 * render (hooks.maxRendered*Bytes): every long mail is refused as
 * rendered_too_large and skipped, not cut at maxBytes as meant. Such a pair
 * of settings is a mail-flow problem: `serve` warns of it, `hookgate check`
 * refuses it, naming the setting and the largest maxBytes the bounds allow;
 * settings that fit, or a flow that reads no bodies, have none.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileConfig } from '../engine/config/compile.ts';
import { resolveConfig } from '../engine/config.ts';
import { mailHooks } from './helpers/gmail-binary.ts';
import { type GmailStandIn, startGmailStandIn } from './helpers/gmail-stand-in.ts';

let gmail: GmailStandIn;

beforeAll(async () => {
  gmail = await startGmailStandIn();
});
afterAll(async () => {
  await gmail.close();
});

function problems(maxBytes: number, bounds: Record<string, number>, includeBody = true) {
  const loaded = resolveConfig(
    {
      hooks: {
        enabled: true,
        token: 'hook-token-0123456789abcdef',
        ...bounds,
        ...mailHooks(gmail, {
          push: { mode: 'token' },
          pushToken: 'push-secret-token-body-budget',
          maxBytes,
          includeBody,
        }),
      },
    },
    { baseDir: '/tmp', dataDir: '/tmp/hookgate-body-budget-none', env: {} },
  );
  return compileConfig(loaded).mailProblems.filter((p) => p.path === 'hooks.gmail.maxBytes');
}

describe('a mail body larger than a mapping may render (long mail skipped, not cut)', () => {
  it.each([
    ['maxRenderedFieldBytes', { maxRenderedFieldBytes: 65_536 }],
    ['maxRenderedActionBytes', { maxRenderedActionBytes: 65_536 }],
    ['maxRenderedRequestBytes', { maxRenderedRequestBytes: 65_536 }],
  ])('a smaller %s is a problem naming hooks.gmail.maxBytes and what fits', (_name, bounds) => {
    const [problem] = problems(200_000, bounds);
    expect(problem?.message).toMatch(
      /renders past hooks\.maxRendered\*Bytes \(65536\).*at most 60160 /,
    );
  });

  it('none when the body fits, or when bodies are not read', () => {
    expect(problems(50_000, { maxRenderedFieldBytes: 65_536 })).toEqual([]);
    expect(problems(200_000, { maxRenderedFieldBytes: 65_536 }, false)).toEqual([]);
    expect(problems(20_000, {})).toEqual([]);
  });
});

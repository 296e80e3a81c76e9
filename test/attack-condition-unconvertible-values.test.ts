/**
 * Attack (on an operator's guard: a mapping that ignores what is not its own, before one that
 * takes the rest): a value JavaScript cannot convert. An object with its own `toString` or
 * `valueOf` key (`{"toString": 1}`) makes `!=`, `<`, `cat`, `in` over text, `+`... throw, and
 * an evaluation that threw was "no match": `{"!=": [{"var": "payload.repository"}, "acme/app"]}`,
 * true for every other repository, was false for it, so the guard let the request through to
 * the next mapping (200, a wake stored for a repository it meant to ignore). Such a payload is
 * now refused like one too costly for the condition: 400 `invalid_payload` naming the mapping
 * and `match.when`, nothing stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';

type Body = { ignored?: string; error?: { code: string; details?: Record<string, unknown> } };

describe("a guard's condition over a value it cannot convert", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        mappings: [
          {
            id: 'other-repos',
            match: { path: 'repo', when: { '!=': [{ var: 'payload.repository' }, 'acme/app'] } },
            action: 'ignore',
          },
          {
            id: 'other-teams',
            match: {
              path: 'team',
              when: { '!': { in: [{ var: 'payload.team' }, 'ops platform'] } },
            },
            action: 'ignore',
          },
          {
            id: 'small-amounts',
            match: { path: 'amount', when: { '<': [{ var: 'payload.amount' }, 1000] } },
            action: 'ignore',
          },
          {
            id: 'the-rest',
            action: 'wake',
            templates: {
              text: '{{hook}}: {{payload.repository}}{{payload.team}}{{payload.amount}}',
            },
          },
        ],
      },
    });
  });
  afterAll(() => server.stop());

  const stored = async () => (await server.store.listActions({ limit: 1000 })).length;

  it.each([
    ['an object with its own toString key', 'repo', 'other-repos', { repository: { toString: 1 } }],
    [
      'an object with its own valueOf and toString keys',
      'amount',
      'small-amounts',
      { amount: { valueOf: 1, toString: 1 } },
    ],
    [
      'a list holding such an object',
      'repo',
      'other-repos',
      { repository: [{ toString: 'acme/app' }] },
    ],
    ['such an object searched for in a text', 'team', 'other-teams', { team: { toString: 'ops' } }],
  ])(
    '%s is refused, not steered past the guard to the next mapping',
    async (_name, hook, guard, payload) => {
      const before = await stored();
      const res = await server.post(hook, payload);
      const body = (await res.json()) as Body;
      expect(res.status).toBe(400);
      expect(body.error?.code).toBe('invalid_payload');
      expect(body.error?.details).toEqual({ mappingId: guard, field: 'match.when' });
      expect(await stored()).toBe(before);
    },
  );

  it.each([
    ['another repository', 'repo', { repository: 'evil/app' }, 'other-repos'],
    ['an ordinary object', 'repo', { repository: { name: 'acme/app' } }, 'other-repos'],
    ['another team', 'team', { team: 'sales' }, 'other-teams'],
    ['a small amount', 'amount', { amount: 5 }, 'small-amounts'],
  ])('%s is still ignored by the guard', async (_name, hook, payload, guard) => {
    const res = await server.post(hook, payload);
    expect(res.status).toBe(200);
    expect(((await res.json()) as Body).ignored).toBe(guard);
  });

  it.each([
    ['its own repository', 'repo', { repository: 'acme/app' }],
    ['its own team', 'team', { team: 'ops' }],
    ['a large amount', 'amount', { amount: 5000 }],
  ])('%s goes on to the next mapping', async (_name, hook, payload) => {
    const res = await server.post(hook, payload);
    expect(res.status).toBe(200);
    expect(((await res.json()) as Body).ignored).toBeUndefined();
  });
});

/**
 * "A top-level string value containing `{{` is a template too" (README, Mapped
 * hooks): also for the fields whose plain value is one of a few words
 * (`thinking`, `wakeMode`, `mode`), which the schema once took for plain
 * values only and refused at boot. A plain value outside the words is still a
 * boot error; a rendered one outside them is 400, as from `templates`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, resolveConfig } from '../engine/config.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';

describe('top-level templates of worded fields', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        mappings: [
          {
            id: 'levels',
            match: { path: 'levels' },
            message: 'Review {{payload.title}}',
            thinking: '{{payload.level}}',
            wakeMode: '{{payload.when}}',
          },
          {
            id: 'ping',
            match: { path: 'ping' },
            action: 'wake',
            text: 'Ping {{payload.what}}',
            mode: '{{payload.when}}',
          },
        ],
      },
    });
  });
  afterAll(() => server?.stop());

  const stored = async (id: string) =>
    (await server.store.listActions({ limit: 100 })).find((row) => row.action.id === id)?.action;

  it('renders thinking and wakeMode from the payload', async () => {
    const res = await server.post('levels', {
      title: 'PR 7',
      level: 'high',
      when: 'next-heartbeat',
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { runId: string };
    expect(await stored(body.runId)).toMatchObject({
      kind: 'agent',
      message: 'Review PR 7',
      thinking: 'high',
      wakeMode: 'next-heartbeat',
    });
  });

  it("renders a wake's mode from the payload", async () => {
    const res = await server.post('ping', { what: 'db', when: 'next-heartbeat' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ ok: true, mode: 'next-heartbeat' });
  });

  it('refuses a rendered value outside the words with 400 naming the field', async () => {
    const res = await server.post('levels', { title: 'x', level: 'extreme' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('invalid_payload');
    expect(body.error.message).toContain('thinking');
  });

  it('still refuses a plain value outside the words at boot', () => {
    const load = () =>
      resolveConfig(
        {
          hooks: {
            enabled: true,
            token: 'test-hook-token-0123456789',
            mappings: [{ id: 'm', match: { path: 'm' }, message: 'x', thinking: 'extreme' }],
          },
        },
        { baseDir: '/tmp', env: {} },
      );
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/hooks\.mappings\.0\.thinking: must be one of "off"/);
  });
});

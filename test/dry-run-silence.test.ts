/**
 * A dry run (`hookgate test`, the console's playground and replay) is not
 * traffic: it publishes no stage timings and no authentication failures,
 * so the metrics and alerts built on them see only real requests.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { compileConfig } from '../engine/config/compile.ts';
import { dryRun } from '../engine/ingress/dry-run.ts';
import { authFailed, stageTimed } from '../engine/observe/events.ts';
import { TOKEN } from './helpers/hookgate.ts';

const seen: string[] = [];
const onStage = () => seen.push('stage');
const onAuth = () => seen.push('auth');
afterEach(() => {
  unsubscribe(stageTimed.name, onStage);
  unsubscribe(authFailed.name, onAuth);
  seen.length = 0;
});

describe('dry runs', () => {
  it('publish neither stage timings nor authentication failures', async () => {
    subscribe(stageTimed.name, onStage);
    subscribe(authFailed.name, onAuth);
    const loaded = resolveConfig(
      { hooks: { enabled: true, token: TOKEN } },
      { baseDir: '/tmp', dataDir: '/tmp/hookgate-dry-run-silence', env: {} },
    );
    const compiled = compileConfig(loaded);
    const request = {
      hook: 'wake',
      body: Buffer.from('{"text":"hi"}'),
      headers: { 'content-type': 'application/json', authorization: 'Bearer wrong-token' },
      query: '',
    };
    const refused = await dryRun(loaded.config, compiled.routes(), request);
    expect(refused.status).toBe(401);
    const { authorization: _dropped, ...withoutToken } = request.headers;
    const accepted = await dryRun(loaded.config, compiled.routes(), {
      ...request,
      headers: withoutToken,
    });
    expect(accepted.status).toBe(200);
    expect(seen).toEqual([]);
  });
});

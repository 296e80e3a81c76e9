/**
 * Attack: a transform that throws (or rejects with) a value whose reading runs its own code: a
 * getter on `message`, a Proxy, an Error.prepareStackTrace the module installed, which any
 * ordinary bug then triggers on a payload it did not expect. Copied out of the isolate, that
 * code ran in the transform process with no CPU timeout, until the server's deadline killed
 * the process; and a thrown message chose the failure kind (`Script execution timed out.`
 * answered transform_timeout). The call must end within its CPU time, in its process, as a
 * transform failure or timeout, with no restart, and the server keep answering beside it.
 */
import { type Channel, subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transformRestarted } from '../engine/observe/events.ts';
import { type TestServer, tempDir } from './helpers/hookgate.ts';
import { QUICK, startWithTransforms } from './helpers/transform-server.ts';

const LOOP = 'for (;;) {}';
const MODULES: Record<string, string> = {
  quick: QUICK,
  // An ordinary bug (a field the payload lacks) with a stack formatter that never returns.
  'stack-trace': `Error.prepareStackTrace = () => { ${LOOP} };
    export default ({ payload }) => ({ message: payload.pull_request.title });`,
  'message-getter': `export default () => {
    const error = new Error('x');
    Object.defineProperty(error, 'message', { get() { ${LOOP} } });
    throw error;
  };`,
  'stack-getter': `export default () => {
    const error = new Error('x');
    Object.defineProperty(error, 'stack', { get() { ${LOOP} } });
    throw error;
  };`,
  'proxy-rejection': `export default async () => { await null; throw new Proxy({}, { get() { ${LOOP} } }); };`,
  'unreadable-rejection': 'export default () => Promise.reject(Object.create(null));',
  'forged-timeout': "export default () => { throw new Error('Script execution timed out.'); };",
  // A rejection nothing handles is copied out by isolated-vm with its own message.
  'forged-timeout-unhandled':
    "export default () => { Promise.reject(new Error('Script execution timed out.')); return { message: 'x' }; };",
  'forged-size': "export default () => { throw new Error('hookgate:output-too-large'); };",
  'thrown-symbol': "export default () => { throw Symbol('s'); };",
  // Joined pieces (repeat builds them by doubling): cheap to make, 0.5 GB to copy whole.
  'huge-console':
    "export default () => { console.log('x'.repeat((1 << 29) - 24)); return { message: 'logged' }; };",
};

type Answer = { status: number; code: string | undefined };

describe('a transform throwing values that run code when read', () => {
  const temp = tempDir();
  let server: TestServer;
  let restarts = 0;
  const onRestart = () => {
    restarts++;
  };
  const post = async (hook: string, payload: unknown = {}): Promise<Answer> => {
    const res = await server.post(hook, payload);
    const body = (await res.json()) as { error?: { code?: string } };
    return { status: res.status, code: body.error?.code };
  };

  beforeAll(async () => {
    server = await startWithTransforms(temp.dir, MODULES, { cpuTimeoutMs: 100, deadlineMs: 4000 });
    subscribe((transformRestarted as Channel).name, onRestart);
  });
  afterAll(async () => {
    unsubscribe((transformRestarted as Channel).name, onRestart);
    await server.stop();
    temp.cleanup();
  });

  it.each([
    ['stack-trace', { pull_request: null }],
    ['message-getter', {}],
    ['stack-getter', {}],
    ['proxy-rejection', {}],
  ])('%s: the call ends in its CPU time, without a restart', async (hook, payload) => {
    const before = restarts;
    const [answer, beside] = await Promise.all([post(hook, payload), post('quick')]);
    expect(answer.status).toBe(500);
    expect(['transform_failed', 'transform_timeout']).toContain(answer.code);
    expect(beside.status).toBe(200);
    // Answered by a process that was never replaced (a replacement is spawned, and counted, first).
    expect((await post('quick')).status).toBe(200);
    expect(restarts - before).toBe(0);
  });

  it.each([
    'forged-timeout',
    'forged-timeout-unhandled',
    'forged-size',
    'thrown-symbol',
    'unreadable-rejection',
  ])('%s: a thrown value is a transform failure, whatever it says', async (hook) => {
    const before = restarts;
    expect(await post(hook)).toEqual({ status: 500, code: 'transform_failed' });
    expect(restarts - before).toBe(0);
  });

  it('a console line of 512M joined characters is named by its length, without a restart', async () => {
    const before = restarts;
    expect(await post('huge-console')).toEqual({ status: 200, code: undefined });
    expect(restarts - before).toBe(0);
  });

  it('an honest stack-trace module still answers a payload it expects', async () => {
    const answer = await post('stack-trace', { pull_request: { title: 'fine' } });
    expect(answer.status).toBe(200);
  });
});

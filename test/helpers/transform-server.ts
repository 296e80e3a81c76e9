/**
 * Test helpers for transform end-to-end tests: transform modules written
 * where a config in the data directory finds them, and a real hookgate
 * started with one mapping per module.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startTestServer, type TestServer, tempDir } from './hookgate.ts';

/** A transform whose call never settles: it holds its process until the deadline. */
export const NEVER_SETTLES = 'export default () => new Promise(() => {});\n';
/** A transform that answers at once with the message "quick". */
export const QUICK = 'export default () => ({ message: "quick" });\n';

/**
 * Write `modules` (id to source) as `<id>.js` under `dir`'s transform root and start hookgate
 * (silent, no runtime) on `dir` with `transforms` settings and one mapping per module, served
 * at `/hooks/<id>`.
 */
export async function startWithTransforms(
  dir: string,
  modules: Record<string, string>,
  transforms: Record<string, unknown>,
): Promise<TestServer> {
  const root = path.join(dir, 'hooks', 'transforms');
  mkdirSync(root, { recursive: true });
  for (const [id, source] of Object.entries(modules)) {
    writeFileSync(path.join(root, `${id}.js`), source);
  }
  const mappings = Object.keys(modules).map((id) => ({
    id,
    match: { path: id },
    transform: { module: `${id}.js` },
  }));
  return startTestServer({ hooks: { transforms, mappings } }, { dataDir: dir });
}

/**
 * One hookgate with `modules` (as startWithTransforms) for the tests of a `describe`: started
 * before them, stopped (and its directory removed) after; read the server with the getter. The
 * module sources are built when it starts (`modules` may be a function, for values of that
 * moment).
 */
export function transformServerFor(
  modules: Record<string, string> | (() => Record<string, string>),
  transforms: Record<string, unknown>,
): () => TestServer {
  const temp = tempDir();
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await startWithTransforms(
      temp.dir,
      typeof modules === 'function' ? modules() : modules,
      transforms,
    );
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    temp.cleanup();
  });
  return () => {
    if (!server) throw new Error('the transform server did not start');
    return server;
  };
}

/** A request's status and error code, as the transform attacks compare them. */
export type Answer = { status: number; code: string | undefined };

/** POST `{}` to a hook: its status and error code. */
export async function postAnswer(server: TestServer, hook: string): Promise<Answer> {
  const res = await server.post(hook, {});
  const body = (await res.json().catch(() => ({}))) as { error?: { code?: string } };
  return { status: res.status, code: body.error?.code };
}

/**
 * Test helpers for transform end-to-end tests: transform modules written
 * where a config in the data directory finds them, and a real hookgate
 * started with one mapping per module.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startTestServer, type TestServer } from './hookgate.ts';

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

import { fileURLToPath } from 'node:url';
import { afterAll, it } from 'vitest';
import { tempDir } from './helpers/hookgate.ts';
import { expectChildReplaced } from './helpers/hostile-child.ts';

const CHILD = fileURLToPath(new URL('./fixtures/sandbox/stderr-flood.mjs', import.meta.url));
const temp = tempDir();
afterAll(() => temp.cleanup());

it('a process flooding its stderr is replaced', async () => {
  await expectChildReplaced(CHILD, temp.dir);
}, 60_000);

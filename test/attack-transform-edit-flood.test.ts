/**
 * Attack by a transform's author on the other mappings: editing a module on disk between every
 * two of its calls. An honest transform process recompiles a module whose files changed at its
 * next call and reports each good compile to the server (which reads and keeps the text); the
 * server counts those reports, and a process over the count is taken for a liar, killed, and
 * every call it held failed, other mappings' too. A module edited at every call (a file touched
 * in a loop) drove the honest process over that count. The process now recompiles a module at
 * most so many times a minute (the edits past that are picked up later), well within what the
 * server allows.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { postAnswer, transformServerFor } from './helpers/transform-server.ts';

const edited = (i: number) =>
  `export default () => ({ message: 'edit ${i}' });\n// ${'x'.repeat(i % 7)}\n`;

const server = transformServerFor(
  { edited: edited(0), other: 'export default () => ({ message: "other" });\n' },
  {},
);

it('a module edited before each of 160 calls: every call of every mapping is answered', async () => {
  const file = path.join(server().dataDir, 'hooks', 'transforms', 'edited.js');
  const failures: string[] = [];
  // Two mappings: the server allows 100 + 20 x 2 reports a minute.
  for (let i = 1; i <= 160; i++) {
    writeFileSync(file, edited(i));
    const [mine, theirs] = await Promise.all([
      postAnswer(server(), 'edited'),
      postAnswer(server(), 'other'),
    ]);
    if (mine.status !== 200) failures.push(`edited #${i}: ${mine.code}`);
    if (theirs.status !== 200) failures.push(`other #${i}: ${theirs.code}`);
  }
  expect(failures).toEqual([]);
}, 120_000);

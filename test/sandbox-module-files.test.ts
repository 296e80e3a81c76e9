/**
 * Reading transform modules with containment checked on the file that was
 * actually opened: symlinks inside the root are fine, a symlink (or a
 * symlinked directory) that leads outside is refused, and so is anything
 * that is not a regular file (a FIFO in a module's place must not hang).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readContained, realRootOf, signatureOf } from '../engine/sandbox/module-files.ts';
import { ContainmentError } from '../engine/sandbox/paths.ts';
import { tempDir } from './helpers/hookgate.ts';

describe('readContained', () => {
  const temp = tempDir();
  const root = path.join(temp.dir, 'root');
  const outside = path.join(temp.dir, 'outside');
  mkdirSync(path.join(root, 'lib'), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(path.join(root, 'a.js'), 'inside');
  writeFileSync(path.join(outside, 'evil.js'), 'outside');
  symlinkSync(path.join(root, 'a.js'), path.join(root, 'link-in.js'));
  symlinkSync(path.join(outside, 'evil.js'), path.join(root, 'link-out.js'));
  symlinkSync(outside, path.join(root, 'dir-out'));
  execFileSync('mkfifo', [path.join(root, 'fifo.js')]);
  const realRoot = realRootOf(root);
  afterAll(() => temp.cleanup());

  it.each([
    ['a file inside', 'a.js'],
    ['a symlink that stays inside', 'link-in.js'],
  ])('reads %s', (_name, file) => {
    expect(readContained(realRoot, path.join(root, file))).toBe('inside');
  });

  it.each([
    ['a symlink to a file outside', 'link-out.js'],
    ['a file under a symlinked directory outside', 'dir-out/evil.js'],
    ['a FIFO', 'fifo.js'],
    ['a directory', 'lib'],
  ])('refuses %s', (_name, file) => {
    expect(() => readContained(realRoot, path.join(root, file))).toThrow(ContainmentError);
  });

  it('a swap for a symlink changes the signature even when the target looks the same', () => {
    const file = path.join(root, 'swap.js');
    writeFileSync(file, 'same');
    const before = signatureOf(file);
    const copy = path.join(outside, 'swap.js');
    writeFileSync(copy, 'same');
    execFileSync('touch', ['-r', file, copy]);
    execFileSync('ln', ['-sf', copy, file]);
    expect(signatureOf(file)).not.toBe(before);
  });
});

/**
 * Path containment for transform modules: each escape form refused, symlinks
 * judged by where they lead, and a property over generated paths.
 */
import { existsSync, mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fc, test } from '@fast-check/vitest';
import { afterAll, describe, expect, it } from 'vitest';
import { ContainmentError, isInside, resolveContained } from '../engine/sandbox/paths.ts';
import { tempDir } from './helpers/hookgate.ts';

const temp = tempDir();
const root = path.join(temp.dir, 'hooks', 'transforms');
const outside = path.join(temp.dir, 'outside');
mkdirSync(path.join(root, 'sub'), { recursive: true });
mkdirSync(outside, { recursive: true });
writeFileSync(path.join(root, 'ok.js'), 'export default () => ({})');
writeFileSync(path.join(root, 'sub', 'inner.js'), 'export default () => ({})');
writeFileSync(path.join(outside, 'evil.js'), 'export default () => ({})');
symlinkSync(path.join(outside, 'evil.js'), path.join(root, 'link-out.js'));
symlinkSync(outside, path.join(root, 'dir-out'));
symlinkSync(path.join(root, 'sub', 'inner.js'), path.join(root, 'link-in.js'));
symlinkSync(path.join(root, 'sub'), path.join(root, 'dir-in'));
afterAll(() => temp.cleanup());

describe('resolveContained', () => {
  it.each([
    ['a plain file', 'ok.js', 'ok.js'],
    ['a file in a sub-directory', 'sub/inner.js', 'sub/inner.js'],
    ['a symlink that stays inside', 'link-in.js', 'link-in.js'],
    ['a file under a directory symlink that stays inside', 'dir-in/inner.js', 'dir-in/inner.js'],
    ['a file that does not exist yet', 'new/thing.js', 'new/thing.js'],
  ])('accepts %s', (_name, requested, expected) => {
    expect(resolveContained(root, root, requested)).toBe(path.join(root, expected));
  });

  it.each([
    ['parent traversal', '../outside/evil.js'],
    ['traversal that comes back', 'sub/../ok.js'],
    ['an absolute path', path.join(outside, 'evil.js')],
    ['an absolute path inside the root', path.join(root, 'ok.js')],
    ['a home path', '~/evil.js'],
    ['a file URL', 'file:///etc/passwd'],
    ['an http URL', 'https://example.com/x.js'],
    ['a drive letter', 'C:/evil.js'],
    ['backslashes', 'sub\\inner.js'],
    ['a NUL byte', 'ok.js\0.png'],
    ['an empty path', ''],
    ['a symlink leaving the root', 'link-out.js'],
    ['a directory symlink leaving the root', 'dir-out/evil.js'],
    ['a missing file under a symlink leaving the root', 'dir-out/new.js'],
  ])('refuses %s', (_name, requested) => {
    expect(() => resolveContained(root, root, requested)).toThrow(ContainmentError);
  });

  it('lets relative imports use .. while they stay inside', () => {
    const from = path.join(root, 'sub');
    expect(resolveContained(root, from, '../ok.js', { allowParent: true })).toBe(
      path.join(root, 'ok.js'),
    );
    expect(() =>
      resolveContained(root, from, '../../outside/evil.js', { allowParent: true }),
    ).toThrow(ContainmentError);
  });

  const segment = fc.oneof(
    fc.constantFrom(
      '..',
      '.',
      '',
      'sub',
      'ok.js',
      'link-out.js',
      'dir-out',
      'dir-in',
      '~',
      'C:',
      '%2e%2e',
      '\u2025',
      '．．',
    ),
    fc.string({ maxLength: 6 }),
  );
  test.prop([fc.array(segment, { maxLength: 6 }).map((parts) => parts.join('/')), fc.boolean()])(
    'any path either resolves inside the root (lexically and for real) or is refused',
    (requested, absolute) => {
      const candidate = absolute ? `/${requested}` : requested;
      let resolved: string;
      try {
        resolved = resolveContained(root, root, candidate);
      } catch (err) {
        expect(err).toBeInstanceOf(ContainmentError);
        return;
      }
      expect(isInside(root, resolved)).toBe(true);
      expect(resolved.split(path.sep)).not.toContain('..');
      if (existsSync(resolved))
        expect(isInside(realpathSync(root), realpathSync(resolved))).toBe(true);
    },
  );
});

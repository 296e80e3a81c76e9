/**
 * The README stands alone: every link points to a file inside the repository
 * or to a heading of the README itself.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes. */
const anchors = new Set(
  [...README.matchAll(/^#+ (.+)$/gm)].map((m) =>
    (m[1] as string)
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-'),
  ),
);

const links = [...README.matchAll(/\]\(([^)\s]+)\)|<((?:https?|ftp):[^>]+)>/g)].map(
  (m) => (m[1] ?? m[2]) as string,
);

describe('README links', () => {
  it('the README links nothing outside the repository', () => {
    expect(links.length).toBeGreaterThan(0);
    for (const link of links) {
      expect(link, link).not.toMatch(/^[a-z][a-z0-9+.-]*:/i);
      if (link.startsWith('#')) {
        expect(anchors.has(link.slice(1)), link).toBe(true);
        continue;
      }
      const target = path.resolve(ROOT, link.split('#')[0] as string);
      expect(path.relative(ROOT, target).startsWith('..'), link).toBe(false);
      expect(existsSync(target), link).toBe(true);
    }
  });
});

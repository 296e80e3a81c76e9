/**
 * Which parts of an HTML mail a reader does not see, for the HTML-mail text (html-text.ts),
 * without an element stack: a region opens at an element that changes whether text is seen (one
 * that hides, or a descendant that shows again what its hidden parent hid, see inline-style.ts)
 * and counts the elements opened and closed inside it, by name, until its own element closes.
 * Regions nest at most MAX_REGIONS deep (only elements that change what is seen open one; a real
 * mail needs two or three); past that the rest of the message is hidden. Each token costs the
 * same at any depth and the counts hold at most one entry per markup token already paid.
 *
 * Markup a browser repairs (misnested or unclosed tags) is judged toward hiding: a hidden region
 * ends only when every element opened inside it is closed, so one never closed hides the rest of
 * the message; a region that shows ends at the first close of its own element, or at a close of
 * an element opened before it.
 */

import type { StyleEffect } from './inline-style.ts';

/** How deep regions nest before the rest of the message is hidden. */
export const MAX_REGIONS = 16;

type Seen = { hard: boolean; zeroFont: boolean; invisible: boolean };

type Region = {
  name: string;
  seen: Seen;
  // Elements open inside the region, by name (its own element included), and their sum.
  open: Map<string, number>;
  depth: number;
};

const VISIBLE: Seen = { hard: false, zeroFont: false, invisible: false };

const shows = (seen: Seen) => !seen.hard && !seen.zeroFont && !seen.invisible;

/** The regions open at the current point of one HTML document. */
export class HiddenRegions {
  private readonly regions: Region[] = [];
  private rest = false;

  /** Whether text here is seen. */
  shown(): boolean {
    return !this.rest && shows(this.top());
  }

  /** Whether an element opened here could change what is seen (its attributes worth reading). */
  changeable(): boolean {
    return !this.rest && !this.top().hard;
  }

  /** Whether any region is open (the names of the tags matter). */
  active(): boolean {
    return this.rest || this.regions.length > 0;
  }

  /** A non-void element opened with what its attributes say (undefined: nothing). */
  open(name: string, effect: StyleEffect | undefined): void {
    if (this.rest) return;
    const parent = this.top();
    const seen = effect === undefined || parent.hard ? parent : apply(parent, effect);
    const region = this.regions.at(-1);
    if (seen === parent || same(seen, parent)) {
      if (region !== undefined) count(region, name, 1);
    } else if (this.regions.length === MAX_REGIONS) this.rest = true;
    else this.regions.push({ name, seen, open: new Map([[name, 1]]), depth: 1 });
  }

  /** An element closed. */
  close(name: string): void {
    if (this.rest) return;
    let region = this.regions.at(-1);
    // A region that shows ends early: at a close of an element not opened inside it too.
    while (region !== undefined && shows(region.seen)) {
      if ((region.open.get(name) ?? 0) > 0) {
        count(region, name, -1);
        if (name === region.name && region.open.get(name) === 0) this.regions.pop();
        return;
      }
      this.regions.pop();
      region = this.regions.at(-1);
    }
    if (region === undefined) return;
    // A hidden region ends late: its own close ends it only when nothing opened inside is open.
    const open = region.open.get(name) ?? 0;
    if (open === 0 || (name === region.name && open === 1 && region.depth > 1)) return;
    count(region, name, -1);
    if (region.depth === 0) this.regions.pop();
  }

  private top(): Seen {
    return this.regions.at(-1)?.seen ?? VISIBLE;
  }
}

function apply(parent: Seen, effect: StyleEffect): Seen {
  return {
    hard: effect.hides,
    zeroFont: effect.fontSize === undefined ? parent.zeroFont : effect.fontSize === 'zero',
    invisible: effect.visibility === undefined ? parent.invisible : effect.visibility === 'hidden',
  };
}

function same(a: Seen, b: Seen): boolean {
  return a.hard === b.hard && a.zeroFont === b.zeroFont && a.invisible === b.invisible;
}

function count(region: Region, name: string, by: 1 | -1): void {
  region.open.set(name, (region.open.get(name) ?? 0) + by);
  region.depth += by;
}

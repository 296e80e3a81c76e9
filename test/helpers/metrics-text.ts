/**
 * Test helpers: read the Prometheus text format back (the samples of a
 * metric and their labels), to assert what a scraper would see.
 */

export type Sample = { name: string; labels: Record<string, string>; value: number };

const LINE = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

/** Every sample in a rendered text. */
export function samples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL))
      labels[key as string] = (value as string).replace(/\\(.)/g, (_, c: string) =>
        c === 'n' ? '\n' : c,
      );
    out.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return out;
}

/** The samples of one metric whose labels include `labels`. */
export function series(text: string, name: string, labels: Record<string, string> = {}): Sample[] {
  return samples(text).filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
}

/** The sum of the matching samples' values (0 when there are none). */
export function value(text: string, name: string, labels: Record<string, string> = {}): number {
  return series(text, name, labels).reduce((sum, s) => sum + s.value, 0);
}

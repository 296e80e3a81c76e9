/** Order statistics for the bench's repeated measurements. */

function sorted(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

/** The median (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const order = sorted(values);
  if (order.length === 0) return Number.NaN;
  const mid = Math.floor(order.length / 2);
  return order.length % 2
    ? (order[mid] as number)
    : ((order[mid - 1] as number) + (order[mid] as number)) / 2;
}

/** The first and third quartiles (nearest rank). */
export function quartiles(values: readonly number[]): readonly [number, number] {
  const order = sorted(values);
  const at = (q: number) => order[Math.min(order.length - 1, Math.floor(q * order.length))] ?? 0;
  return [at(0.25), at(0.75)];
}

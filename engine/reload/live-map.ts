/**
 * A read-only map whose contents a reload replaces in one step. The runtime
 * holds these for agents and channels, so it always reads the current
 * configuration's without being rebuilt.
 */
export class LiveMap<K, V> implements ReadonlyMap<K, V> {
  #inner: ReadonlyMap<K, V>;

  constructor(inner: ReadonlyMap<K, V>) {
    this.#inner = inner;
  }

  /** Replace the contents (the next read sees the new map). */
  swap(inner: ReadonlyMap<K, V>): void {
    this.#inner = inner;
  }

  get size(): number {
    return this.#inner.size;
  }
  get(key: K): V | undefined {
    return this.#inner.get(key);
  }
  has(key: K): boolean {
    return this.#inner.has(key);
  }
  forEach(fn: (value: V, key: K, map: ReadonlyMap<K, V>) => void): void {
    for (const [key, value] of this.#inner) fn(value, key, this);
  }
  entries(): MapIterator<[K, V]> {
    return this.#inner.entries();
  }
  keys(): MapIterator<K> {
    return this.#inner.keys();
  }
  values(): MapIterator<V> {
    return this.#inner.values();
  }
  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.#inner[Symbol.iterator]();
  }
}

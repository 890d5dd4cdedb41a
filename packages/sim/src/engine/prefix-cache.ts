// The engine's prefix cache: a set of chained block keys with LRU eviction at a capacity in blocks.
// A Map keeps insertion order, so "touch" is delete + set and the oldest key is the first one.
import type { BlockKey } from "@meridian/routing";

export class PrefixCache {
  private readonly blocks = new Map<BlockKey, true>();
  private evicted = 0;

  constructor(readonly capacityBlocks: number) {}

  get size(): number {
    return this.blocks.size;
  }

  /** Blocks evicted since construction (a flush does not count). */
  get evictions(): number {
    return this.evicted;
  }

  has(key: BlockKey): boolean {
    return this.blocks.has(key);
  }

  /** Length of the longest prefix of `keys` held in the cache. Keys are chained, so matching stops at the first miss. */
  matchPrefix(keys: readonly BlockKey[]): number {
    let depth = 0;
    while (depth < keys.length && this.blocks.has(keys[depth]!)) depth++;
    return depth;
  }

  /**
   * Marks `keys` (a chain, root first) as just used, inserting the missing ones, then evicts down to
   * capacity. The chain is touched deepest block first so that its root ends up the most recently used:
   * LRU then evicts leaves before the prefixes they hang from, as a radix cache would, and a shared
   * system prompt is never evicted from under the conversations that extend it.
   */
  touchChain(keys: readonly BlockKey[]): void {
    if (this.capacityBlocks === 0) return;
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      this.blocks.delete(key);
      this.blocks.set(key, true);
    }
    this.evictToCapacity();
  }

  clear(): void {
    this.blocks.clear();
  }

  private evictToCapacity(): void {
    let excess = this.blocks.size - this.capacityBlocks;
    if (excess <= 0) return;
    for (const key of this.blocks.keys()) {
      this.blocks.delete(key);
      this.evicted++;
      if (--excess === 0) break;
    }
  }
}

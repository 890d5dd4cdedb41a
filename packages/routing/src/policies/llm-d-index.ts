// llm-d's approximate prefix indexer, as the llm-d policy keeps it (see llm-d.ts for the source).
//
// One LRU of block hashes per server, and a map from each hash to the servers whose LRU holds it.
// Adding a prompt touches its hashes in prompt order, so within one prompt the first block is the
// least recent and goes first when the LRU is full: llm-d's own order, kept on purpose. A match walks
// the prompt's hashes from the start while any server holds the current one and counts, per server,
// the hashes it holds along the way (not only a contiguous run): llm-d's greedy matchLongestPrefix.
//
// Bounded: each server's LRU holds at most its capacity (fixed when the server is first added, as
// llm-d sizes it at that moment), and the hash map holds only hashes some LRU holds. llm-d also drops
// the LRU of a pod that left the pool (checked every 2 minutes): removeServer, when the LB core says
// a replica left or now names another engine; its next add sizes its LRU afresh, for that engine.

import type { BlockKey } from "../types";

export class LlmdPrefixIndexer {
  private readonly servers = new Map<string, number>();
  private readonly serverIds: string[] = [];
  private readonly lrus: Map<BlockKey, true>[] = [];
  private readonly capacities: number[] = [];
  /** hash → numbers of the servers whose LRU holds it (a short list: usually one to a few). */
  private readonly holders = new Map<BlockKey, number[]>();

  /** Entries in one server's LRU (0 for a server never added). */
  size(serverId: string): number {
    const s = this.servers.get(serverId);
    return s === undefined ? 0 : (this.lrus[s] as Map<BlockKey, true>).size;
  }

  /** Records that `serverId` holds `hashes`; `capacity` sizes its LRU when this is its first add. */
  add(hashes: readonly BlockKey[], serverId: string, capacity: number): void {
    let s = this.servers.get(serverId);
    if (s === undefined) {
      s = this.serverIds.length;
      this.servers.set(serverId, s);
      this.serverIds.push(serverId);
      this.lrus.push(new Map());
      this.capacities.push(0);
    }
    // 0: not sized yet (a new server, or one removed since: another engine, maybe another size).
    if (this.capacities[s] === 0) this.capacities[s] = Math.max(1, Math.floor(capacity));
    const lru = this.lrus[s] as Map<BlockKey, true>;
    const cap = this.capacities[s] as number;
    for (const h of hashes) {
      if (lru.delete(h)) {
        lru.set(h, true); // refresh: most recent is last
        continue;
      }
      lru.set(h, true);
      const list = this.holders.get(h);
      if (list === undefined) this.holders.set(h, [s]);
      else list.push(s);
      if (lru.size > cap) this.evictOldest(s, lru);
    }
  }

  /** Forgets every hash `serverId` holds (the pod left the pool). */
  removeServer(serverId: string): void {
    const s = this.servers.get(serverId);
    if (s === undefined) return;
    const lru = this.lrus[s] as Map<BlockKey, true>;
    for (const h of lru.keys()) this.dropHolder(h, s);
    lru.clear();
    this.capacities[s] = 0;
  }

  /** Per server number, the hashes it holds on the greedy walk; `counts` is reset and filled. */
  matchCounts(hashes: readonly BlockKey[], counts: Map<string, number>): void {
    counts.clear();
    for (const h of hashes) {
      const list = this.holders.get(h);
      if (list === undefined) break;
      for (const s of list) {
        const id = this.serverIds[s] as string;
        counts.set(id, (counts.get(id) ?? 0) + 1);
      }
    }
  }

  private evictOldest(s: number, lru: Map<BlockKey, true>): void {
    const oldest = lru.keys().next().value as BlockKey;
    lru.delete(oldest);
    this.dropHolder(oldest, s);
  }

  private dropHolder(h: BlockKey, s: number): void {
    const list = this.holders.get(h);
    if (list === undefined) return;
    const at = list.indexOf(s);
    if (at >= 0) list.splice(at, 1);
    if (list.length === 0) this.holders.delete(h);
  }
}

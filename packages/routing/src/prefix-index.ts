// PrefixIndex: which replica holds which prompt block, learned from this LB's own traffic (LOCAL) or
// from a peer LB's snapshot (REMOTE).
//
// Memory layout. The unit of storage is a ROUTE: one (block, replica) pair. Routes live in a pool of
// typed arrays (no object per route), so memory is bounded by `capacityBlocks` routes under any
// input: a flood of distinct blocks, of replicas, or of peers can only evict, never grow past it.
// Blocks are found through an open-addressing hash table (linear probing, backward-shift delete)
// keyed by the 53-bit block key, with each block's routes on a short singly linked chain.
// Two intrusive LRU lists (one per trust level) order routes by last use; eviction takes the REMOTE
// tail first, then the LOCAL tail. TTL counts from the time a route was (re)learned.
//
// Learning touches a prompt's blocks deepest-first, so a chain's shallow blocks are always at least
// as recent as its deep ones: LRU evicts the deep tail of an idle conversation first and keeps the
// shared system prompt. That ordering makes "replica r holds block k" (nearly) monotone in k, which
// lets match() binary-search each replica's depth instead of walking all ~1250 keys of an 80 KB
// prompt. Chaining also makes the answer meaningful: holding key_k means the replica was sent blocks
// 0..k, so depth = 1 + the deepest held block found.

import { RoutingInputError, describe, requireFiniteNumber } from "./errors";
import { RouteStore } from "./route-store";
import type { MatchResult, PrefixIndexOptions, PrefixIndexStats, PrefixSnapshot, RouteInfo } from "./prefix-index-types";
import type { BlockKey, Trust } from "./types";

// Local copies of route-store.ts's sentinel and trust levels: an imported binding is not folded into
// the hot loops' comparisons.
const NIL = -1;
const LOCAL = 0;
const REMOTE = 1;

export type { MatchResult, PrefixIndexOptions, PrefixIndexStats, PrefixSnapshot, RouteInfo } from "./prefix-index-types";

const MAX_BLOCK_KEY = Number.MAX_SAFE_INTEGER;

function checkKeys(field: string, keys: readonly BlockKey[]): void {
  if (!Array.isArray(keys)) throw new RoutingInputError(field, `must be an array of block keys, got ${describe(keys)}`);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as number;
    // Fast path first: a valid key is an integer in [0, 2^53).
    if (!(k >= 0 && k <= MAX_BLOCK_KEY && Math.floor(k) === k)) {
      throw new RoutingInputError(`${field}[${i}]`, `must be an unsigned integer block key < 2^53, got ${describe(k)}`);
    }
  }
}

function checkTrust(trust: unknown): number {
  if (trust === "LOCAL") return LOCAL;
  if (trust === "REMOTE") return REMOTE;
  throw new RoutingInputError("trust", `must be "LOCAL" or "REMOTE", got ${describe(trust)}`);
}

function checkReplicaId(field: string, id: unknown): string {
  if (typeof id !== "string" || id.length === 0) throw new RoutingInputError(field, `must be a non-empty string, got ${describe(id)}`);
  return id;
}

function checkOptions(options: PrefixIndexOptions): { capacity: number; ttl: number; perBlock: number } {
  if (options === null || typeof options !== "object") throw new RoutingInputError("options", "must be an object");
  const capacity = options.capacityBlocks;
  if (typeof capacity !== "number" || !Number.isInteger(capacity) || capacity <= 0 || capacity > 0x7fffffff) {
    throw new RoutingInputError("capacityBlocks", `must be a positive integer < 2^31, got ${describe(capacity)}`);
  }
  const ttl = options.ttlMs ?? 3_600_000;
  if (typeof ttl !== "number" || !(ttl > 0)) throw new RoutingInputError("ttlMs", `must be a positive number, got ${describe(ttl)}`);
  const perBlock = options.maxReplicasPerBlock ?? 64;
  if (typeof perBlock !== "number" || !Number.isInteger(perBlock) || perBlock <= 0) {
    throw new RoutingInputError("maxReplicasPerBlock", `must be a positive integer, got ${describe(perBlock)}`);
  }
  return { capacity, ttl, perBlock };
}

export class PrefixIndex extends RouteStore {
  readonly ttlMs: number;
  readonly maxReplicasPerBlock: number;

  private evictions = 0;
  private expirations = 0;
  private hits = 0;
  private lookups = 0;
  private matchedBlockSum = 0;

  constructor(options: PrefixIndexOptions) {
    const checked = checkOptions(options);
    super(checked.capacity);
    this.ttlMs = checked.ttl;
    this.maxReplicasPerBlock = checked.perBlock;
    this.reset();
  }

  /** Drops every route and resets the counters. */
  clear(): void {
    this.reset();
    this.evictions = 0;
    this.expirations = 0;
    this.hits = 0;
    this.lookups = 0;
    this.matchedBlockSum = 0;
  }

  private reset(): void {
    this.resetStore();
  }

  // ---------------------------------------------------------------- public API

  /**
   * Longest match of `keys` per replica. With `only`, considers just those replica ids (the
   * candidates) and stops as soon as none of them holds the first block.
   */
  match(keys: readonly BlockKey[], now: number, only?: readonly string[]): MatchResult {
    checkKeys("keys", keys);
    requireFiniteNumber("now", now);
    this.lookups++;
    const depthByReplica = new Map<string, number>();
    let wanted: Set<number> | null = null;
    if (only !== undefined) {
      if (!Array.isArray(only)) throw new RoutingInputError("only", `must be an array of replica ids, got ${describe(only)}`);
      wanted = new Set<number>();
      for (const id of only) {
        depthByReplica.set(id, 0);
        const r = this.replicas.find(id);
        if (r !== undefined) wanted.add(r);
      }
    }
    const n = keys.length;
    let maxDepth = 0;
    if (n === 0 || (wanted !== null && wanted.size === 0)) return { depthByReplica, maxDepth };

    const first = this.findTable(keys[0] as number);
    if (first < 0) return { depthByReplica, maxDepth };
    const expiredBefore = now - this.ttlMs;
    for (let s = this.tableHeads[first] as number; s !== NIL; s = this.blockNext[s] as number) {
      const r = this.slotReplica[s] as number;
      if (wanted !== null && !wanted.has(r)) continue;
      if ((this.slotLearnedAt[s] as number) <= expiredBefore) continue;
      // Binary search for the deepest block r holds; block 0 is known to be held.
      let lo = 0;
      let hi = n - 1;
      if (hi > 0 && this.holds(keys[hi] as number, r, expiredBefore)) lo = hi;
      else hi--;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (this.holds(keys[mid] as number, r, expiredBefore)) lo = mid;
        else hi = mid - 1;
      }
      const depth = lo + 1;
      depthByReplica.set(this.replicas.name(r), depth);
      if (depth > maxDepth) maxDepth = depth;
    }
    if (maxDepth > 0) this.hits++;
    this.matchedBlockSum += maxDepth;
    return { depthByReplica, maxDepth };
  }

  /** Records that `replicaId` now holds every block of `keys` (a chained prefix). */
  learn(keys: readonly BlockKey[], replicaId: string, trust: Trust, now: number): void {
    checkKeys("keys", keys);
    checkReplicaId("replicaId", replicaId);
    const trustLevel = checkTrust(trust);
    requireFiniteNumber("now", now);
    this.sweepExpired(now);
    const r = this.replicas.pin(replicaId);
    try {
      // Deepest first, so the shallow (shared) blocks end up most recent; see the file header.
      for (let k = keys.length - 1; k >= 0; k--) this.upsert(keys[k] as number, r, trustLevel, now);
    } finally {
      this.replicas.unpin(r);
    }
  }

  /** LOCAL block keys, most recently used first, at most `maxBlocks` (default: all). */
  snapshot(maxBlocks?: number, now?: number): PrefixSnapshot {
    let limit = this.blockCount;
    if (maxBlocks !== undefined) {
      if (!Number.isInteger(maxBlocks) || maxBlocks < 0) throw new RoutingInputError("maxBlocks", `must be a non-negative integer, got ${describe(maxBlocks)}`);
      limit = Math.min(limit, maxBlocks);
    }
    const expiredBefore = now === undefined ? -Infinity : requireFiniteNumber("now", now) - this.ttlMs;
    const out: BlockKey[] = [];
    const seen = new Set<number>();
    for (let s = this.lruHead[LOCAL] as number; s !== NIL && out.length < limit; s = this.slotNext[s] as number) {
      if ((this.slotLearnedAt[s] as number) <= expiredBefore) continue;
      const key = this.slotKey[s] as number;
      if (!seen.has(key)) {
        seen.add(key);
        out.push(key);
      }
    }
    return out;
  }

  /** Stores a peer's snapshot as REMOTE routes under the peer's id. */
  learnSnapshot(peerId: string, snapshot: PrefixSnapshot, now: number): void {
    checkReplicaId("peerId", peerId);
    checkKeys("snapshot", snapshot);
    requireFiniteNumber("now", now);
    this.sweepExpired(now);
    const r = this.replicas.pin(peerId);
    try {
      // Least recent first so the peer's most recent blocks end up most recent here too; anything
      // beyond our capacity would be evicted immediately, so it is not even inserted.
      const start = Math.min(snapshot.length, this.capacityBlocks) - 1;
      for (let i = start; i >= 0; i--) this.upsert(snapshot[i] as number, r, REMOTE, now);
    } finally {
      this.replicas.unpin(r);
    }
  }

  /** Forgets `replicaId`'s routes for keys[fromDepth..] (e.g. the replica reported fewer cached
   * tokens than predicted). Returns the number of routes removed. */
  forget(keys: readonly BlockKey[], replicaId: string, fromDepth = 0): number {
    checkKeys("keys", keys);
    const r = this.replicas.find(checkReplicaId("replicaId", replicaId));
    if (r === undefined) return 0;
    let removed = 0;
    for (let k = Math.max(0, fromDepth); k < keys.length; k++) {
      const s = this.findRoute(keys[k] as number, r);
      if (s !== NIL) {
        this.removeRoute(s);
        removed++;
      }
    }
    return removed;
  }

  /** Drops every route of a replica (or peer). Returns the number removed. */
  removeReplica(replicaId: string): number {
    const r = this.replicas.find(checkReplicaId("replicaId", replicaId));
    if (r === undefined) return 0;
    let removed = 0;
    for (let s = 0; s < this.used; s++) {
      if (this.slotReplica[s] === r) {
        this.removeRoute(s);
        removed++;
      }
    }
    return removed;
  }

  /** Routes stored for one block (for debugging and tests). */
  routesOf(key: BlockKey): RouteInfo[] {
    const t = this.findTable(key);
    const out: RouteInfo[] = [];
    if (t < 0) return out;
    for (let s = this.tableHeads[t] as number; s !== NIL; s = this.blockNext[s] as number) {
      out.push({
        replicaId: this.replicas.name(this.slotReplica[s] as number),
        lastUse: this.slotLastUse[s] as number,
        learnedAt: this.slotLearnedAt[s] as number,
        trust: this.slotTrust[s] === LOCAL ? "LOCAL" : "REMOTE",
      });
    }
    return out;
  }

  stats(): PrefixIndexStats {
    return {
      routes: this.trustRoutes[LOCAL]! + this.trustRoutes[REMOTE]!,
      blocks: this.blockCount,
      localRoutes: this.trustRoutes[LOCAL]!,
      remoteRoutes: this.trustRoutes[REMOTE]!,
      replicas: this.replicas.size,
      capacityBlocks: this.capacityBlocks,
      ttlMs: this.ttlMs,
      evictions: this.evictions,
      expirations: this.expirations,
      hits: this.hits,
      lookups: this.lookups,
      matchedBlocks: this.matchedBlockSum,
    };
  }

  // ---------------------------------------------------------------- routes

  private holds(key: number, r: number, expiredBefore: number): boolean {
    const t = this.findTable(key);
    if (t < 0) return false;
    for (let s = this.tableHeads[t] as number; s !== NIL; s = this.blockNext[s] as number) {
      if (this.slotReplica[s] === r) return (this.slotLearnedAt[s] as number) > expiredBefore;
    }
    return false;
  }

  private findRoute(key: number, r: number): number {
    const t = this.findTable(key);
    if (t < 0) return NIL;
    for (let s = this.tableHeads[t] as number; s !== NIL; s = this.blockNext[s] as number) {
      if (this.slotReplica[s] === r) return s;
    }
    return NIL;
  }

  private upsert(key: number, r: number, trust: number, now: number): void {
    const existing = this.findRoute(key, r);
    if (existing !== NIL) {
      this.lruUnlink(existing);
      // Own observations outrank a peer's: a LOCAL route is never downgraded to REMOTE.
      if (trust === LOCAL && this.slotTrust[existing] === REMOTE) {
        this.trustRoutes[REMOTE]!--;
        this.trustRoutes[LOCAL]!++;
        this.slotTrust[existing] = LOCAL;
      }
      this.slotLastUse[existing] = now;
      this.slotLearnedAt[existing] = now;
      this.lruPushFront(existing);
      return;
    }
    this.makeRoomOnBlock(key);
    // Allocation may evict and thereby reshuffle the table, so look the block up afterwards.
    const s = this.allocateSlot();
    this.slotKey[s] = key;
    this.slotReplica[s] = r;
    this.slotLastUse[s] = now;
    this.slotLearnedAt[s] = now;
    this.slotTrust[s] = trust;
    this.trustRoutes[trust]!++;
    this.replicas.routeAdded(r);
    this.lruPushFront(s);
    let t = this.findTable(key);
    if (t < 0) {
      t = this.insertTable(key);
      this.tableHeads[t] = s;
      this.blockNext[s] = NIL;
    } else {
      this.blockNext[s] = this.tableHeads[t] as number;
      this.tableHeads[t] = s;
    }
  }

  /** Enforces maxReplicasPerBlock before a new route joins `key`'s chain. New routes go to the chain
   * head, so the chain's last route is the one learned longest ago. */
  private makeRoomOnBlock(key: number): void {
    const t = this.findTable(key);
    if (t < 0) return;
    let length = 0;
    let last = NIL;
    for (let s = this.tableHeads[t] as number; s !== NIL; s = this.blockNext[s] as number) {
      length++;
      last = s;
    }
    if (length >= this.maxReplicasPerBlock) {
      this.removeRoute(last);
      this.evictions++;
    }
  }

  private allocateSlot(): number {
    if (this.freeSlot !== NIL) {
      const s = this.freeSlot;
      this.freeSlot = this.blockNext[s] as number;
      return s;
    }
    if (this.used < this.poolSize) return this.used++;
    if (this.poolSize < this.capacityBlocks) {
      this.growPool(Math.min(this.capacityBlocks, this.poolSize * 2));
      return this.used++;
    }
    // Full: evict the least recently used REMOTE route, else the least recently used LOCAL one.
    const victim = this.lruTail[REMOTE] !== NIL ? (this.lruTail[REMOTE] as number) : (this.lruTail[LOCAL] as number);
    this.removeRoute(victim);
    this.evictions++;
    const s = this.freeSlot;
    this.freeSlot = this.blockNext[s] as number;
    return s;
  }

  private removeRoute(s: number): void {
    const key = this.slotKey[s] as number;
    const t = this.findTable(key);
    if (t >= 0) {
      let prev = NIL;
      for (let cur = this.tableHeads[t] as number; cur !== NIL; prev = cur, cur = this.blockNext[cur] as number) {
        if (cur === s) {
          if (prev === NIL) this.tableHeads[t] = this.blockNext[s] as number;
          else this.blockNext[prev] = this.blockNext[s] as number;
          break;
        }
      }
      if (this.tableHeads[t] === NIL) this.deleteTable(t);
    }
    this.lruUnlink(s);
    const trust = this.slotTrust[s] as number;
    this.trustRoutes[trust]!--;
    const r = this.slotReplica[s] as number;
    this.replicas.routeRemoved(r);
    this.slotReplica[s] = NIL;
    this.blockNext[s] = this.freeSlot;
    this.freeSlot = s;
  }

  /** Reclaims expired routes from the LRU tails. Routes deeper in a list may also be expired; they
   * are ignored by match() and reclaimed when they reach a tail. */
  private sweepExpired(now: number): void {
    const expiredBefore = now - this.ttlMs;
    this.sweepList(REMOTE, expiredBefore);
    this.sweepList(LOCAL, expiredBefore);
  }

  private sweepList(trust: number, expiredBefore: number): void {
    for (let s = this.lruTail[trust] as number; s !== NIL; s = this.lruTail[trust] as number) {
      if ((this.slotLearnedAt[s] as number) > expiredBefore) break;
      this.removeRoute(s);
      this.expirations++;
    }
  }
}

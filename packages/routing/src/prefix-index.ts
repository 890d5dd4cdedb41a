// PrefixIndex: which replica holds which prompt block, learned from this LB's own traffic (LOCAL) or
// from a peer LB's snapshot (REMOTE), and kept close to what the engines actually hold.
//
// Storage. The unit is a ROUTE, one (block, replica) pair, in a pool of typed arrays (route-pool.ts),
// so memory is bounded by `capacityBlocks` routes under any input: a flood of distinct blocks, of
// replicas or of peers can only evict, never grow past it. Blocks are found through an open-addressing
// table (block-table.ts) keyed by the 53-bit block key; each block's routes hang on a short chain.
//
// Forgetting, in the order that usually applies first:
//   - a replica's BUDGET: its engine's prefix-cache size in blocks (the LB reads it from the engine's
//     metrics, or the operator sets it). Past it, the replica's own least recently used route goes,
//     so the index evicts about when the engine does. No budget: no per-replica bound.
//   - a replica's HORIZON: routes learned longer ago than this are not offered to match(). An LRU
//     cache under steady load keeps a block about as long as a characteristic time (Che's
//     approximation), which the cache-report feedback (cache-feedback.ts) learns per replica. Hidden
//     routes stay stored, so a later report can show the horizon was too short.
//   - the TTL (default 1 h), a backstop for engines that report nothing;
//   - global capacity: the least recently used REMOTE route, then the least recently used LOCAL one;
//   - forget() / removeReplica(): the feedback trimming a replica after a lower cached-token report,
//     or an engine restart.
//
// Learning touches a prompt's blocks deepest-first with one timestamp, so a chain's shallow blocks are
// always at least as recent as its deep ones: LRU evicts the deep tail of an idle conversation first
// and keeps the shared system prompt. That makes "replica r holds block k" monotone in k, which lets
// match() binary-search each replica's depth (about 11 probes for the ~1250 keys of an 80 KB prompt)
// and lets holdingProfile() describe a chain's ages in a few runs. Chaining also makes the answer
// meaningful: holding key_k means the replica was sent blocks 0..k, so depth = 1 + deepest held block.

import { BlockTable, NIL } from "./block-table";
import { RoutingInputError, describe, requireFiniteNumber } from "./errors";
import { checkKeys, checkReplicaId, checkTrust } from "./prefix-index-checks";
import type { HoldingProfile, HoldingRun, MatchResult, PrefixIndexOptions, PrefixIndexStats, PrefixMatcher, PrefixSnapshot } from "./prefix-index-types";
import type { ReplicaIndexView, RouteInfo } from "./prefix-index-types";
import { ReplicaIds } from "./replica-ids";
import { LOCAL, REMOTE, RoutePool } from "./route-pool";
import type { BlockKey, Trust } from "./types";

export type * from "./prefix-index-types";

const INITIAL_POOL = 1024;
/** Runs a holding profile keeps; the last one absorbs the rest (see holdingProfile). */
const DEFAULT_PROFILE_RUNS = 8;

export class PrefixIndex implements PrefixMatcher {
  readonly capacityBlocks: number;
  readonly ttlMs: number;
  readonly maxReplicasPerBlock: number;

  private readonly pool: RoutePool;
  private readonly table = new BlockTable();

  // Replica ids <-> small ints. Budgets and horizons are kept by id (they outlive the routes) and
  // mirrored by number, refreshed whenever a number is pinned for a learn, for the hot paths.
  private readonly replicas = new ReplicaIds();
  private readonly budgets = new Map<string, number>();
  private readonly horizons = new Map<string, number>();
  private replicaBudget: number[] = [];
  private replicaHorizon: number[] = [];

  private evictions = 0;
  private expirations = 0;
  private hits = 0;
  private lookups = 0;
  private matchedBlockSum = 0;

  constructor(options: PrefixIndexOptions) {
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
    this.capacityBlocks = capacity;
    this.ttlMs = ttl;
    this.maxReplicasPerBlock = perBlock;
    this.pool = new RoutePool(capacity, INITIAL_POOL);
  }

  /** Drops every route and resets the counters. Budgets and horizons stay. */
  clear(): void {
    this.pool.reset();
    this.table.reset();
    this.replicas.reset();
    this.replicaBudget = [];
    this.replicaHorizon = [];
    this.evictions = 0;
    this.expirations = 0;
    this.hits = 0;
    this.lookups = 0;
    this.matchedBlockSum = 0;
  }

  // ---------------------------------------------------------------- public API

  /**
   * Longest match of `keys` per replica, each replica's horizon applied. With `only`, considers just
   * those replica ids (the candidates) and stops as soon as none of them holds the first block.
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

    const pool = this.pool;
    for (let s = this.headOf(keys[0] as number); s !== NIL; s = pool.blockNext[s] as number) {
      const r = pool.replica[s] as number;
      if (wanted !== null && !wanted.has(r)) continue;
      const expiredBefore = this.expiredBefore(r, now);
      if ((pool.learnedAt[s] as number) <= expiredBefore) continue;
      const depth = this.heldDepth(keys, r, expiredBefore);
      depthByReplica.set(this.replicas.name(r), depth);
      if (depth > maxDepth) maxDepth = depth;
    }
    if (maxDepth > 0) this.hits++;
    this.matchedBlockSum += maxDepth;
    return { depthByReplica, maxDepth };
  }

  /**
   * The chain of `keys` as `replicaId` holds it now, ignoring the replica's horizon (the TTL still
   * applies): its depth and learn times in at most `maxRuns` runs. When a chain has more runs, the
   * last run covers the rest with the learn time of the deepest held block (the oldest).
   */
  holdingProfile(keys: readonly BlockKey[], replicaId: string, now: number, maxRuns = DEFAULT_PROFILE_RUNS): HoldingProfile {
    checkKeys("keys", keys);
    requireFiniteNumber("now", now);
    const r = this.replicas.find(checkReplicaId("replicaId", replicaId));
    const runs: HoldingRun[] = [];
    if (r === undefined || keys.length === 0) return { depth: 0, runs };
    const expiredBefore = now - this.ttlMs;
    if (!this.holds(keys[0] as number, r, expiredBefore)) return { depth: 0, runs };
    const depth = this.heldDepth(keys, r, expiredBefore);
    const limit = Math.max(1, Math.floor(maxRuns));
    let start = 0;
    while (start < depth) {
      if (runs.length === limit - 1) {
        runs.push({ end: depth, learnedAt: this.learnedAtOf(keys[depth - 1] as number, r) });
        break;
      }
      const at = this.learnedAtOf(keys[start] as number, r);
      // Learn times are non-increasing along a chain, so "learned at `at` or later" holds on a prefix.
      let lo = start;
      let hi = depth - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (this.learnedAtOf(keys[mid] as number, r) >= at) lo = mid;
        else hi = mid - 1;
      }
      runs.push({ end: lo + 1, learnedAt: at });
      start = lo + 1;
    }
    return { depth, runs };
  }

  /** Records that `replicaId` now holds every block of `keys` (a chained prefix). */
  learn(keys: readonly BlockKey[], replicaId: string, trust: Trust, now: number): void {
    checkKeys("keys", keys);
    checkReplicaId("replicaId", replicaId);
    const trustLevel = checkTrust(trust);
    requireFiniteNumber("now", now);
    this.sweepExpired(now);
    const r = this.pin(replicaId);
    try {
      // Deepest first, so the shallow (shared) blocks end up most recent; see the file header.
      for (let k = keys.length - 1; k >= 0; k--) this.upsert(keys[k] as number, r, trustLevel, now);
    } finally {
      this.replicas.unpin(r);
    }
  }

  /** LOCAL block keys, most recently used first, at most `maxBlocks` (default: all). */
  snapshot(maxBlocks?: number, now?: number): PrefixSnapshot {
    let limit = this.table.count;
    if (maxBlocks !== undefined) {
      if (!Number.isInteger(maxBlocks) || maxBlocks < 0) throw new RoutingInputError("maxBlocks", `must be a non-negative integer, got ${describe(maxBlocks)}`);
      limit = Math.min(limit, maxBlocks);
    }
    const expiredBefore = now === undefined ? -Infinity : requireFiniteNumber("now", now) - this.ttlMs;
    const pool = this.pool;
    const out: BlockKey[] = [];
    const seen = new Set<number>();
    for (let s = pool.head[LOCAL] as number; s !== NIL && out.length < limit; s = pool.next[s] as number) {
      if ((pool.learnedAt[s] as number) <= expiredBefore) continue;
      const key = pool.key[s] as number;
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
    const r = this.pin(peerId);
    try {
      // Least recent first so the peer's most recent blocks end up most recent here too; anything
      // beyond our capacity would be evicted immediately, so it is not even inserted.
      const start = Math.min(snapshot.length, this.capacityBlocks) - 1;
      for (let i = start; i >= 0; i--) this.upsert(snapshot[i] as number, r, REMOTE, now);
    } finally {
      this.replicas.unpin(r);
    }
  }

  /**
   * Forgets `replicaId`'s routes for keys[fromDepth..] (the replica reported fewer cached tokens than
   * predicted). With `learnedAtOrBefore`, a route learned after that time stays: something newer than
   * the report says the replica holds it again. Returns the number of routes removed.
   */
  forget(keys: readonly BlockKey[], replicaId: string, fromDepth = 0, learnedAtOrBefore = Infinity): number {
    checkKeys("keys", keys);
    const r = this.replicas.find(checkReplicaId("replicaId", replicaId));
    if (r === undefined) return 0;
    let removed = 0;
    for (let k = Math.max(0, fromDepth); k < keys.length; k++) {
      const s = this.findRoute(keys[k] as number, r);
      if (s !== NIL && (this.pool.learnedAt[s] as number) <= learnedAtOrBefore) {
        this.removeRoute(s);
        removed++;
      }
    }
    return removed;
  }

  /** Drops every route of a replica (or peer); its budget and horizon stay. Returns the number removed. */
  removeReplica(replicaId: string): number {
    if (this.replicas.find(checkReplicaId("replicaId", replicaId)) === undefined) return 0;
    const r = this.replicas.pin(replicaId);
    let removed = 0;
    try {
      for (let s = this.pool.replicaTail[r] ?? NIL; s !== NIL; s = this.pool.replicaTail[r] ?? NIL) {
        this.removeRoute(s);
        removed++;
      }
    } finally {
      this.replicas.unpin(r);
    }
    return removed;
  }

  /** Bounds `replicaId`'s routes (its engine's cache in blocks); null removes the bound. Lowering it
   * evicts the replica's least recently used routes at once. */
  setReplicaBudget(replicaId: string, maxRoutes: number | null): void {
    checkReplicaId("replicaId", replicaId);
    if (maxRoutes === null) {
      this.budgets.delete(replicaId);
    } else {
      if (typeof maxRoutes !== "number" || !Number.isInteger(maxRoutes) || maxRoutes < 0) {
        throw new RoutingInputError("maxRoutes", `must be a non-negative integer or null, got ${describe(maxRoutes)}`);
      }
      this.budgets.set(replicaId, maxRoutes);
    }
    if (this.replicas.find(replicaId) === undefined) return;
    const r = this.pin(replicaId);
    try {
      const budget = this.replicaBudget[r] as number;
      while (this.replicas.count(r) > budget) this.evict(this.pool.replicaTail[r] as number);
    } finally {
      this.replicas.unpin(r);
    }
  }

  /** Hides `replicaId`'s routes learned more than `horizonMs` ago from match(); null removes it. */
  setReplicaHorizon(replicaId: string, horizonMs: number | null): void {
    checkReplicaId("replicaId", replicaId);
    if (horizonMs === null) {
      this.horizons.delete(replicaId);
    } else {
      if (typeof horizonMs !== "number" || !(horizonMs >= 0) || horizonMs === Infinity) {
        throw new RoutingInputError("horizonMs", `must be a finite number >= 0 or null, got ${describe(horizonMs)}`);
      }
      this.horizons.set(replicaId, horizonMs);
    }
    const r = this.replicas.find(replicaId);
    if (r !== undefined) this.replicaHorizon[r] = horizonMs ?? Infinity;
  }

  replicaView(replicaId: string): ReplicaIndexView {
    checkReplicaId("replicaId", replicaId);
    const r = this.replicas.find(replicaId);
    return {
      routes: r === undefined ? 0 : this.replicas.count(r),
      budget: this.budgets.get(replicaId) ?? null,
      horizonMs: this.horizons.get(replicaId) ?? null,
    };
  }

  /** Routes stored for one block (for debugging and tests). */
  routesOf(key: BlockKey): RouteInfo[] {
    const pool = this.pool;
    const out: RouteInfo[] = [];
    for (let s = this.headOf(key); s !== NIL; s = pool.blockNext[s] as number) {
      out.push({
        replicaId: this.replicas.name(pool.replica[s] as number),
        learnedAt: pool.learnedAt[s] as number,
        trust: pool.trust[s] === LOCAL ? "LOCAL" : "REMOTE",
      });
    }
    return out;
  }

  stats(): PrefixIndexStats {
    const local = this.pool.trustCount[LOCAL]!;
    const remote = this.pool.trustCount[REMOTE]!;
    return {
      routes: local + remote,
      blocks: this.table.count,
      localRoutes: local,
      remoteRoutes: remote,
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

  /** Routes learned at or before this are invisible to match() for replica `r`. */
  private expiredBefore(r: number, now: number): number {
    const horizon = this.replicaHorizon[r] ?? Infinity;
    const ttlCut = now - this.ttlMs;
    return horizon < this.ttlMs ? now - horizon : ttlCut;
  }

  /** Depth of `keys` held by `r`, knowing it holds keys[0]: binary search for the deepest held block. */
  private heldDepth(keys: readonly BlockKey[], r: number, expiredBefore: number): number {
    let lo = 0;
    let hi = keys.length - 1;
    if (hi > 0 && this.holds(keys[hi] as number, r, expiredBefore)) lo = hi;
    else hi--;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.holds(keys[mid] as number, r, expiredBefore)) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  }

  private holds(key: number, r: number, expiredBefore: number): boolean {
    const pool = this.pool;
    for (let s = this.headOf(key); s !== NIL; s = pool.blockNext[s] as number) {
      if (pool.replica[s] === r) return (pool.learnedAt[s] as number) > expiredBefore;
    }
    return false;
  }

  private learnedAtOf(key: number, r: number): number {
    const s = this.findRoute(key, r);
    return s === NIL ? -Infinity : (this.pool.learnedAt[s] as number);
  }

  private findRoute(key: number, r: number): number {
    const pool = this.pool;
    for (let s = this.headOf(key); s !== NIL; s = pool.blockNext[s] as number) {
      if (pool.replica[s] === r) return s;
    }
    return NIL;
  }

  private upsert(key: number, r: number, trust: number, now: number): void {
    const pool = this.pool;
    const existing = this.findRoute(key, r);
    if (existing !== NIL) {
      pool.touch(existing, trust, now);
      return;
    }
    // The replica's budget first: at its engine's cache size, its own oldest route makes room.
    const budget = this.replicaBudget[r] ?? Infinity;
    if (budget === 0) return;
    if (this.replicas.count(r) >= budget) this.evict(pool.replicaTail[r] as number);
    this.makeRoomOnBlock(key);
    let s = pool.take();
    if (s === NIL) {
      // Full: evict the least recently used REMOTE route, else the least recently used LOCAL one.
      this.evict(pool.tail[REMOTE] !== NIL ? (pool.tail[REMOTE] as number) : (pool.tail[LOCAL] as number));
      s = pool.take();
    }
    pool.fill(s, key, r, trust, now);
    this.replicas.routeAdded(r);
    // Eviction may have reshuffled the table, so look the block up only now.
    const table = this.table;
    let t = table.find(key);
    if (t < 0) {
      t = table.insert(key);
      table.heads[t] = s;
      pool.blockNext[s] = NIL;
    } else {
      pool.blockNext[s] = table.heads[t] as number;
      table.heads[t] = s;
    }
  }

  /** Enforces maxReplicasPerBlock before a new route joins `key`'s chain. New routes go to the chain
   * head, so the chain's last route is the one learned longest ago. */
  private makeRoomOnBlock(key: number): void {
    const pool = this.pool;
    let length = 0;
    let last = NIL;
    for (let s = this.headOf(key); s !== NIL; s = pool.blockNext[s] as number) {
      length++;
      last = s;
    }
    if (length >= this.maxReplicasPerBlock) this.evict(last);
  }

  private evict(s: number): void {
    this.removeRoute(s);
    this.evictions++;
  }

  private removeRoute(s: number): void {
    const pool = this.pool;
    const table = this.table;
    const t = table.find(pool.key[s] as number);
    if (t >= 0) {
      let prev = NIL;
      for (let cur = table.heads[t] as number; cur !== NIL; prev = cur, cur = pool.blockNext[cur] as number) {
        if (cur === s) {
          if (prev === NIL) table.heads[t] = pool.blockNext[s] as number;
          else pool.blockNext[prev] = pool.blockNext[s] as number;
          break;
        }
      }
      if (table.heads[t] === NIL) table.remove(t);
    }
    this.replicas.routeRemoved(pool.release(s));
  }

  /** Reclaims expired routes from the LRU tails. Routes deeper in a list may also be expired; they
   * are ignored by match() and reclaimed when they reach a tail. */
  private sweepExpired(now: number): void {
    const expiredBefore = now - this.ttlMs;
    this.sweepList(REMOTE, expiredBefore);
    this.sweepList(LOCAL, expiredBefore);
  }

  private sweepList(trust: number, expiredBefore: number): void {
    const pool = this.pool;
    for (let s = pool.tail[trust] as number; s !== NIL; s = pool.tail[trust] as number) {
      if ((pool.learnedAt[s] as number) > expiredBefore) break;
      this.removeRoute(s);
      this.expirations++;
    }
  }

  // ---------------------------------------------------------------- replicas

  /** Pins `id` for a learn and refreshes its number's budget and horizon from the settings by id. */
  private pin(id: string): number {
    const r = this.replicas.pin(id);
    this.replicaBudget[r] = this.budgets.get(id) ?? Infinity;
    this.replicaHorizon[r] = this.horizons.get(id) ?? Infinity;
    return r;
  }

  /** First route slot of a block, or NIL. */
  private headOf(key: number): number {
    const t = this.table.find(key);
    return t < 0 ? NIL : (this.table.heads[t] as number);
  }
}

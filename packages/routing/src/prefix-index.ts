// PrefixIndex: which replica holds which prompt block, learned from this LB's own traffic (LOCAL) or
// from a peer LB's snapshot (REMOTE), and kept close to what the engines actually hold. The rules are
// in packages/routing/README.md (*The prefix index*); storage in route-store.ts (one ROUTE per
// (block, replica) pair in typed arrays, bounded by `capacityBlocks` whatever arrives).
//
// Forgetting: a replica's BUDGET (its engine's cache in blocks: its own LRU tail goes), its HORIZON
// (routes learned longer ago are hidden from match() but kept, so a later report can show it was too
// short; cache-feedback.ts learns it), the TTL, global capacity (REMOTE tail, then LOCAL), and
// forget() / removeReplica() (feedback trims, restarts).
//
// Learning touches a prompt's blocks deepest-first with one timestamp, so a chain's shallow blocks are
// always at least as recent as its deep ones: LRU evicts the deep tail of an idle conversation first
// and keeps the shared system prompt. That makes "replica r holds block k" monotone in k, which lets
// match() binary-search each replica's depth (about 11 probes for the ~1250 keys of an 80 KB prompt)
// and lets holdingProfile() describe a chain's ages in a few runs. Chaining also makes the answer
// meaningful: holding key_k means the replica was sent blocks 0..k, so depth = 1 + deepest held block.

import { RoutingInputError, describe, requireFiniteNumber } from "./errors";
import { checkKeys, checkOptions, checkReplicaId, checkTrust } from "./prefix-index-checks";
import { RouteStore } from "./route-store";
import type { HoldingProfile, HoldingRun, MatchResult, PrefixIndexOptions, PrefixIndexStats, PrefixMatcher, PrefixSnapshot } from "./prefix-index-types";
import type { ReplicaIndexView } from "./prefix-index-types";
import type { BlockKey, Trust } from "./types";

// Local copies of route-store.ts's sentinel and trust levels: hot loops fold these, not imports.
const NIL = -1;
const LOCAL = 0;
const REMOTE = 1;

export type * from "./prefix-index-types";

/** Runs a holding profile keeps; the last one absorbs the rest (see holdingProfile). */
const DEFAULT_PROFILE_RUNS = 8;

export class PrefixIndex extends RouteStore implements PrefixMatcher {
  readonly ttlMs: number;
  readonly maxReplicasPerBlock: number;

  // Budgets and horizons are kept by replica id (they outlive the routes) and mirrored by replica
  // number, refreshed whenever a number is pinned for a learn, for the hot paths.
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
    const checked = checkOptions(options);
    super(checked.capacity);
    this.ttlMs = checked.ttl;
    this.maxReplicasPerBlock = checked.perBlock;
    this.reset();
  }

  /** Drops every route and resets the counters. Budgets and horizons stay. */
  clear(): void {
    this.reset();
    this.evictions = this.expirations = this.hits = this.lookups = this.matchedBlockSum = 0;
  }

  private reset(): void {
    this.resetStore();
    this.replicaBudget = [];
    this.replicaHorizon = [];
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

    const first = this.findTable(keys[0] as number);
    if (first < 0) return { depthByReplica, maxDepth };
    for (let s = this.tableHeads[first] as number; s !== NIL; s = this.blockNext[s] as number) {
      const r = this.slotReplica[s] as number;
      if (wanted !== null && !wanted.has(r)) continue;
      const expiredBefore = this.hiddenBefore(r, now);
      if ((this.slotLearnedAt[s] as number) <= expiredBefore) continue;
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

  /** LOCAL block keys, most recently used first, at most `maxBlocks` (default: all). With `now`, only
   * routes match() would find then: a peer is not sent here for a prefix this LB no longer believes held. */
  snapshot(maxBlocks?: number, now?: number): PrefixSnapshot {
    let limit = this.blockCount;
    if (maxBlocks !== undefined) {
      if (!Number.isInteger(maxBlocks) || maxBlocks < 0) throw new RoutingInputError("maxBlocks", `must be a non-negative integer, got ${describe(maxBlocks)}`);
      limit = Math.min(limit, maxBlocks);
    }
    if (now !== undefined) requireFiniteNumber("now", now);
    const out: BlockKey[] = [];
    const seen = new Set<number>();
    for (let s = this.lruHead[LOCAL] as number; s !== NIL && out.length < limit; s = this.slotNext[s] as number) {
      if (now !== undefined && (this.slotLearnedAt[s] as number) <= this.hiddenBefore(this.slotReplica[s] as number, now)) continue;
      const key = this.slotKey[s] as number;
      if (!seen.has(key)) {
        seen.add(key);
        out.push(key);
      }
    }
    return out;
  }

  /** Stores a peer's snapshot, its current belief, as REMOTE routes under its id. A complete one replaces
   * the peer's routes. A truncated one holds only its most recently used keys, so the others stay and
   * expire a TTL after the last report that carried them: dropped, a busy peer (always truncated) would
   * be known only by its last few conversations. */
  learnSnapshot(peerId: string, snapshot: PrefixSnapshot, now: number, truncated = false): void {
    checkReplicaId("peerId", peerId);
    checkKeys("snapshot", snapshot);
    requireFiniteNumber("now", now);
    if (typeof truncated !== "boolean") throw new RoutingInputError("truncated", `must be a boolean, got ${describe(truncated)}`);
    if (!truncated) this.removeReplica(peerId);
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
   *
   * A forgotten block may be shared (a system prompt longer than the cut): other prompts' deeper
   * blocks then stand past the hole, and match(), binary-searching on monotone holding, credits them
   * until a report on those prompts trims them in turn. Dropping the replica's routes learned no later
   * than the hole (its LRU suffix) closed it, and wiped nearly the whole replica on one page-rounded
   * report of a non-streamed request (review r39/5): a self-correcting over-prediction costs less.
   */
  forget(keys: readonly BlockKey[], replicaId: string, fromDepth = 0, learnedAtOrBefore = Infinity): number {
    checkKeys("keys", keys);
    const r = this.replicas.find(checkReplicaId("replicaId", replicaId));
    if (r === undefined) return 0;
    let removed = 0;
    for (let k = Math.max(0, fromDepth); k < keys.length; k++) {
      const s = this.findRoute(keys[k] as number, r);
      if (s !== NIL && (this.slotLearnedAt[s] as number) <= learnedAtOrBefore) {
        this.removeRoute(s);
        removed++;
      }
    }
    return removed;
  }

  /** Leading blocks of `keys` that match() would credit `replicaId` with at `now` (its horizon
   * applied), without counting a lookup: the index's own prediction for a request that another matcher
   * (a peer policy's state, the simulator's oracle) placed. */
  heldBlocks(keys: readonly BlockKey[], replicaId: string, now: number): number {
    checkKeys("keys", keys);
    requireFiniteNumber("now", now);
    const r = this.replicas.find(checkReplicaId("replicaId", replicaId));
    if (r === undefined || keys.length === 0) return 0;
    const hidden = this.hiddenBefore(r, now);
    return this.holds(keys[0] as number, r, hidden) ? this.heldDepth(keys, r, hidden) : 0;
  }

  /** Drops every route of a replica (or peer); its budget and horizon stay. Returns the number removed. */
  removeReplica(replicaId: string): number {
    if (this.replicas.find(checkReplicaId("replicaId", replicaId)) === undefined) return 0;
    const r = this.replicas.pin(replicaId);
    let removed = 0;
    try {
      for (let s = this.replicaTail[r] ?? NIL; s !== NIL; s = this.replicaTail[r] ?? NIL) {
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
      while (this.replicas.count(r) > budget) this.evict(this.replicaTail[r] as number);
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
    const tail = r === undefined ? NIL : (this.replicaTail[r] ?? NIL);
    return {
      routes: r === undefined ? 0 : this.replicas.count(r),
      budget: this.budgets.get(replicaId) ?? null,
      horizonMs: this.horizons.get(replicaId) ?? null,
      oldestLearnedAt: tail === NIL ? null : (this.slotLearnedAt[tail] as number),
    };
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

  /** Pins `id` for a learn and refreshes its number's budget and horizon from the settings by id. */
  private pin(id: string): number {
    const r = this.replicas.pin(id);
    this.replicaBudget[r] = this.budgets.get(id) ?? Infinity;
    this.replicaHorizon[r] = this.horizons.get(id) ?? Infinity;
    return r;
  }

  /** match() at `now` ignores routes of replica number `r` learned at or before this (horizon or TTL). */
  private hiddenBefore(r: number, now: number): number {
    const horizon = this.replicaHorizon[r] as number;
    return horizon < this.ttlMs ? now - horizon : now - this.ttlMs;
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

  private learnedAtOf(key: number, r: number): number {
    const s = this.findRoute(key, r);
    return s === NIL ? -Infinity : (this.slotLearnedAt[s] as number);
  }

  private holds(key: number, r: number, expiredBefore: number): boolean {
    const t = this.findTable(key);
    if (t < 0) return false;
    for (let s = this.tableHeads[t] as number; s !== NIL; s = this.blockNext[s] as number) {
      if (this.slotReplica[s] === r) return (this.slotLearnedAt[s] as number) > expiredBefore;
    }
    return false;
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
      this.slotLearnedAt[existing] = now;
      this.lruPushFront(existing);
      return;
    }
    // The replica's budget first: at its engine's cache size, its own oldest route makes room.
    const budget = this.replicaBudget[r] as number;
    if (budget === 0) return;
    if (this.replicas.count(r) >= budget) this.evict(this.replicaTail[r] as number);
    this.makeRoomOnBlock(key);
    // Allocation may evict and thereby reshuffle the table, so look the block up afterwards.
    const s = this.allocateSlot();
    this.slotKey[s] = key;
    this.slotReplica[s] = r;
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

  /** Enforces maxReplicasPerBlock before a new route joins `key`'s chain: the route learned longest
   * ago goes (not always the chain's last: a re-learned route keeps its place, only its time moves),
   * and with it its replica's routes learned no later (its list's tail): a suffix of each of its
   * chains, so none keeps deeper blocks past the hole for match() and holdingProfile() to count. */
  private makeRoomOnBlock(key: number): void {
    const t = this.findTable(key);
    if (t < 0) return;
    let length = 0;
    let oldest = NIL;
    for (let s = this.tableHeads[t] as number; s !== NIL; s = this.blockNext[s] as number) {
      length++;
      if (oldest === NIL || (this.slotLearnedAt[s] as number) <= (this.slotLearnedAt[oldest] as number)) oldest = s;
    }
    if (length < this.maxReplicasPerBlock) return;
    const r = this.slotReplica[oldest] as number;
    const at = this.slotLearnedAt[oldest] as number;
    this.evict(oldest);
    for (let s = this.replicaTail[r] ?? NIL; s !== NIL && (this.slotLearnedAt[s] as number) <= at; s = this.replicaTail[r] ?? NIL) this.evict(s);
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
    this.evict(this.lruTail[REMOTE] !== NIL ? (this.lruTail[REMOTE] as number) : (this.lruTail[LOCAL] as number));
    const s = this.freeSlot;
    this.freeSlot = this.blockNext[s] as number;
    return s;
  }

  private evict(s: number): void {
    this.removeRoute(s);
    this.evictions++;
  }

  /** Reclaims expired routes from the LRU tails. Routes deeper in a list may also be expired; they
   * are ignored by match() and reclaimed when they reach a tail. */
  private sweepExpired(now: number): void {
    this.sweepList(REMOTE, now - this.ttlMs);
    this.sweepList(LOCAL, now - this.ttlMs);
  }

  private sweepList(trust: number, expiredBefore: number): void {
    for (let s = this.lruTail[trust] as number; s !== NIL; s = this.lruTail[trust] as number) {
      if ((this.slotLearnedAt[s] as number) > expiredBefore) break;
      this.removeRoute(s);
      this.expirations++;
    }
  }
}

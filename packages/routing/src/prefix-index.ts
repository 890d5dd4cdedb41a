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
import type { BlockKey, Trust } from "./types";

const NIL = -1;
const LOCAL = 0;
const REMOTE = 1;
const MAX_BLOCK_KEY = Number.MAX_SAFE_INTEGER;
const INITIAL_POOL = 1024;
const INITIAL_TABLE = 2048;

export interface PrefixIndexOptions {
  /** Upper bound on stored routes, i.e. (block, replica) pairs. Not distinct blocks. */
  capacityBlocks: number;
  /** Routes older than this since last learned are ignored and reclaimed. Default 1 h. */
  ttlMs?: number;
  /** Most replicas (or peers) one block may list; the oldest-learned route on the block makes room.
   * Bounds the per-block chain walk, so lookups stay O(1) whatever ids arrive. Default 64. */
  maxReplicasPerBlock?: number;
}

export interface MatchResult {
  /** Matched depth (leading blocks held) per replica. When `only` was given, every listed id is
   * present (0 when nothing matched); otherwise only replicas with depth ≥ 1. */
  depthByReplica: Map<string, number>;
  maxDepth: number;
}

/** LOCAL block keys, most recently used first; what one LB shares with its peers. */
export type PrefixSnapshot = BlockKey[];

export interface RouteInfo {
  replicaId: string;
  lastUse: number;
  learnedAt: number;
  trust: Trust;
}

export interface PrefixIndexStats {
  /** Stored (block, replica) pairs. */
  routes: number;
  /** Distinct blocks stored. */
  blocks: number;
  localRoutes: number;
  remoteRoutes: number;
  /** Distinct replica / peer ids with at least one route. */
  replicas: number;
  capacityBlocks: number;
  ttlMs: number;
  /** Routes evicted for capacity. */
  evictions: number;
  /** Routes reclaimed because their TTL ran out. */
  expirations: number;
  /** match() calls that found at least one block. */
  hits: number;
  /** match() calls. */
  lookups: number;
  /** Sum over match() calls of the deepest match, for an average-depth gauge. */
  matchedBlocks: number;
}

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

/** Table slot for a key: block keys are already hashes, one multiply spreads them over the mask. */
function tableHash(key: number): number {
  return Math.imul((key >>> 0) ^ ((key / 4294967296) | 0), 0x9e3779b1) >>> 0;
}

export class PrefixIndex {
  readonly capacityBlocks: number;
  readonly ttlMs: number;
  readonly maxReplicasPerBlock: number;

  // Route pool (struct of arrays), grown by doubling up to capacityBlocks.
  private poolSize = 0;
  private used = 0; // slots ever handed out (high-water mark)
  private freeSlot = NIL; // free list threaded through blockNext
  private slotKey: Float64Array = new Float64Array(0);
  private slotReplica: Int32Array = new Int32Array(0); // NIL when the slot is free
  private slotLastUse: Float64Array = new Float64Array(0);
  private slotLearnedAt: Float64Array = new Float64Array(0);
  private slotTrust: Uint8Array = new Uint8Array(0);
  private slotPrev: Int32Array = new Int32Array(0); // LRU: towards most recent
  private slotNext: Int32Array = new Int32Array(0); // LRU: towards least recent
  private blockNext: Int32Array = new Int32Array(0); // next route of the same block

  private readonly lruHead = new Int32Array([NIL, NIL]); // most recent, per trust
  private readonly lruTail = new Int32Array([NIL, NIL]); // least recent, per trust
  private readonly trustRoutes = [0, 0];

  // Block table: key -> first route slot.
  private tableKeys: Float64Array = new Float64Array(0);
  private tableHeads: Int32Array = new Int32Array(0);
  private tableMask = 0;
  private blockCount = 0;

  // Replica ids <-> small ints; an id's number is recycled when its last route goes.
  private replicaIds: (string | undefined)[] = [];
  private readonly replicaNumbers = new Map<string, number>();
  private replicaRoutes: number[] = [];
  private freeReplicaNumbers: number[] = [];
  private pinnedReplica = NIL;

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
    this.poolSize = 0;
    this.used = 0;
    this.freeSlot = NIL;
    this.growPool(Math.min(INITIAL_POOL, this.capacityBlocks));
    this.lruHead.fill(NIL);
    this.lruTail.fill(NIL);
    this.trustRoutes[LOCAL] = 0;
    this.trustRoutes[REMOTE] = 0;
    this.tableKeys = new Float64Array(INITIAL_TABLE);
    this.tableHeads = new Int32Array(INITIAL_TABLE).fill(NIL);
    this.tableMask = INITIAL_TABLE - 1;
    this.blockCount = 0;
    this.replicaIds = [];
    this.replicaNumbers.clear();
    this.replicaRoutes = [];
    this.freeReplicaNumbers = [];
    this.pinnedReplica = NIL;
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
        const r = this.replicaNumbers.get(id);
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
      depthByReplica.set(this.replicaIds[r] as string, depth);
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
    const r = this.replicaNumber(replicaId);
    this.pinnedReplica = r;
    try {
      // Deepest first, so the shallow (shared) blocks end up most recent; see the file header.
      for (let k = keys.length - 1; k >= 0; k--) this.upsert(keys[k] as number, r, trustLevel, now);
    } finally {
      this.pinnedReplica = NIL;
      this.releaseReplicaIfEmpty(r);
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
    const r = this.replicaNumber(peerId);
    this.pinnedReplica = r;
    try {
      // Least recent first so the peer's most recent blocks end up most recent here too; anything
      // beyond our capacity would be evicted immediately, so it is not even inserted.
      const start = Math.min(snapshot.length, this.capacityBlocks) - 1;
      for (let i = start; i >= 0; i--) this.upsert(snapshot[i] as number, r, REMOTE, now);
    } finally {
      this.pinnedReplica = NIL;
      this.releaseReplicaIfEmpty(r);
    }
  }

  /** Forgets `replicaId`'s routes for keys[fromDepth..] (e.g. the replica reported fewer cached
   * tokens than predicted). Returns the number of routes removed. */
  forget(keys: readonly BlockKey[], replicaId: string, fromDepth = 0): number {
    checkKeys("keys", keys);
    const r = this.replicaNumbers.get(checkReplicaId("replicaId", replicaId));
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
    const r = this.replicaNumbers.get(checkReplicaId("replicaId", replicaId));
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
        replicaId: this.replicaIds[this.slotReplica[s] as number] as string,
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
      replicas: this.replicaNumbers.size,
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
    this.replicaRoutes[r] = (this.replicaRoutes[r] ?? 0) + 1;
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
    this.replicaRoutes[r] = (this.replicaRoutes[r] ?? 1) - 1;
    this.releaseReplicaIfEmpty(r);
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

  private growPool(size: number): void {
    const copyF64 = (old: Float64Array): Float64Array => {
      const next = new Float64Array(size);
      next.set(old.subarray(0, Math.min(old.length, size)));
      return next;
    };
    const copyI32 = (old: Int32Array): Int32Array => {
      const next = new Int32Array(size);
      next.set(old.subarray(0, Math.min(old.length, size)));
      return next;
    };
    const wasEmpty = this.poolSize === 0;
    this.slotKey = wasEmpty ? new Float64Array(size) : copyF64(this.slotKey);
    this.slotLastUse = wasEmpty ? new Float64Array(size) : copyF64(this.slotLastUse);
    this.slotLearnedAt = wasEmpty ? new Float64Array(size) : copyF64(this.slotLearnedAt);
    this.slotReplica = wasEmpty ? new Int32Array(size) : copyI32(this.slotReplica);
    this.slotPrev = wasEmpty ? new Int32Array(size) : copyI32(this.slotPrev);
    this.slotNext = wasEmpty ? new Int32Array(size) : copyI32(this.slotNext);
    this.blockNext = wasEmpty ? new Int32Array(size) : copyI32(this.blockNext);
    const trust = new Uint8Array(size);
    if (!wasEmpty) trust.set(this.slotTrust.subarray(0, Math.min(this.slotTrust.length, size)));
    this.slotTrust = trust;
    this.slotReplica.fill(NIL, this.poolSize);
    this.poolSize = size;
  }

  // ---------------------------------------------------------------- LRU lists

  private lruPushFront(s: number): void {
    const trust = this.slotTrust[s] as number;
    const head = this.lruHead[trust] as number;
    this.slotPrev[s] = NIL;
    this.slotNext[s] = head;
    if (head !== NIL) this.slotPrev[head] = s;
    else this.lruTail[trust] = s;
    this.lruHead[trust] = s;
  }

  private lruUnlink(s: number): void {
    const trust = this.slotTrust[s] as number;
    const prev = this.slotPrev[s] as number;
    const next = this.slotNext[s] as number;
    if (prev !== NIL) this.slotNext[prev] = next;
    else this.lruHead[trust] = next;
    if (next !== NIL) this.slotPrev[next] = prev;
    else this.lruTail[trust] = prev;
  }

  // ---------------------------------------------------------------- replicas

  private replicaNumber(id: string): number {
    const known = this.replicaNumbers.get(id);
    if (known !== undefined) return known;
    const r = this.freeReplicaNumbers.pop() ?? this.replicaIds.length;
    this.replicaIds[r] = id;
    this.replicaRoutes[r] = 0;
    this.replicaNumbers.set(id, r);
    return r;
  }

  private releaseReplicaIfEmpty(r: number): void {
    if (r === this.pinnedReplica || this.replicaRoutes[r] !== 0) return;
    const id = this.replicaIds[r];
    if (id === undefined) return;
    this.replicaNumbers.delete(id);
    this.replicaIds[r] = undefined;
    this.freeReplicaNumbers.push(r);
  }

  // ---------------------------------------------------------------- block table

  /** Table index of `key`, or -1. */
  private findTable(key: number): number {
    const mask = this.tableMask;
    const keys = this.tableKeys;
    const heads = this.tableHeads;
    let i = tableHash(key) & mask;
    while (heads[i] !== NIL) {
      if (keys[i] === key) return i;
      i = (i + 1) & mask;
    }
    return -1;
  }

  private insertTable(key: number): number {
    // Keep the load factor ≤ 1/2 so probes stay short.
    if ((this.blockCount + 1) * 2 > this.tableKeys.length) this.growTable();
    const mask = this.tableMask;
    let i = tableHash(key) & mask;
    while (this.tableHeads[i] !== NIL) i = (i + 1) & mask;
    this.tableKeys[i] = key;
    this.blockCount++;
    return i;
  }

  private deleteTable(hole: number): void {
    const mask = this.tableMask;
    const keys = this.tableKeys;
    const heads = this.tableHeads;
    let i = hole;
    let j = hole;
    for (;;) {
      j = (j + 1) & mask;
      if (heads[j] === NIL) break;
      const ideal = tableHash(keys[j] as number) & mask;
      // Move j back into the hole unless its ideal slot lies cyclically in (i, j].
      const inRange = i <= j ? ideal > i && ideal <= j : ideal > i || ideal <= j;
      if (!inRange) {
        keys[i] = keys[j] as number;
        heads[i] = heads[j] as number;
        i = j;
      }
    }
    heads[i] = NIL;
    this.blockCount--;
  }

  private growTable(): void {
    const oldKeys = this.tableKeys;
    const oldHeads = this.tableHeads;
    const size = oldKeys.length * 2;
    this.tableKeys = new Float64Array(size);
    this.tableHeads = new Int32Array(size).fill(NIL);
    this.tableMask = size - 1;
    for (let i = 0; i < oldKeys.length; i++) {
      if (oldHeads[i] === NIL) continue;
      let j = tableHash(oldKeys[i] as number) & this.tableMask;
      while (this.tableHeads[j] !== NIL) j = (j + 1) & this.tableMask;
      this.tableKeys[j] = oldKeys[i] as number;
      this.tableHeads[j] = oldHeads[i] as number;
    }
  }
}

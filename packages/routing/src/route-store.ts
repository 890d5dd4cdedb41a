// The prefix index's storage: the route pool (struct of typed arrays, grown by doubling up to the
// capacity), the LRU lists threaded through it, the block table (block key → first route slot;
// open addressing, linear probing, backward-shift delete), the replica-id interning, and finding and
// removing one route. PrefixIndex (prefix-index.ts) extends it, so the hot paths read these fields on
// `this` with no indirection.
//
// Every live route is on two LRU lists, most recent first: its trust level's (LOCAL or REMOTE),
// which global capacity evicts from, REMOTE tail first; and its replica's, which the replica's own
// budget (its engine's cache size) evicts from, so one replica's traffic never pushes out another's
// routes. A route's learn time is both its recency and its age (every touch re-learns it).
// Bytes per slot: key 8 + learnedAt 8 + replica 4 + four list links 16 + block chain 4 + trust 1 = 41.
import type { RouteInfo } from "./prefix-index-types";
import { ReplicaIds } from "./replica-ids";
import type { BlockKey } from "./types";

// The empty-slot sentinel and the trust levels (prefix-index.ts keeps local copies of the same values).
const NIL = -1;
const LOCAL = 0;
const REMOTE = 1;
const INITIAL_POOL = 1024;
const INITIAL_TABLE = 2048;

/** Table slot for a key: block keys are already hashes, one multiply spreads them over the mask. */
function tableHash(key: number): number {
  return Math.imul((key >>> 0) ^ ((key / 4294967296) | 0), 0x9e3779b1) >>> 0;
}

export class RouteStore {
  // Route pool (struct of arrays), grown by doubling up to capacityBlocks.
  protected poolSize = 0;
  protected used = 0; // slots ever handed out (high-water mark)
  protected freeSlot = NIL; // free list threaded through blockNext
  protected slotKey: Float64Array = new Float64Array(0);
  protected slotReplica: Int32Array = new Int32Array(0); // NIL when the slot is free
  protected slotLearnedAt: Float64Array = new Float64Array(0);
  protected slotTrust: Uint8Array = new Uint8Array(0);
  protected slotPrev: Int32Array = new Int32Array(0); // LRU: towards most recent
  protected slotNext: Int32Array = new Int32Array(0); // LRU: towards least recent
  protected slotReplicaPrev: Int32Array = new Int32Array(0); // replica's LRU: towards most recent
  protected slotReplicaNext: Int32Array = new Int32Array(0); // replica's LRU: towards least recent
  protected blockNext: Int32Array = new Int32Array(0); // next route of the same block

  protected readonly lruHead = new Int32Array([NIL, NIL]); // most recent, per trust
  protected readonly lruTail = new Int32Array([NIL, NIL]); // least recent, per trust
  protected readonly trustRoutes = [0, 0];
  /** Per replica number: its most / least recent route (NIL or absent when it has none). */
  protected readonly replicaHead: number[] = [];
  protected readonly replicaTail: number[] = [];

  // Block table: key -> first route slot (open addressing, linear probing, backward-shift delete).
  protected tableKeys: Float64Array = new Float64Array(0);
  protected tableHeads: Int32Array = new Int32Array(0);
  protected tableMask = 0;
  protected blockCount = 0;

  // Replica ids <-> small ints; an id's number is recycled when its last route goes.
  protected readonly replicas = new ReplicaIds();

  constructor(readonly capacityBlocks: number) {}

  /** Empties the pool, the LRU lists, the table and the replica ids. */
  protected resetStore(): void {
    this.poolSize = 0;
    this.used = 0;
    this.freeSlot = NIL;
    this.growPool(Math.min(INITIAL_POOL, this.capacityBlocks));
    this.lruHead.fill(NIL);
    this.lruTail.fill(NIL);
    this.trustRoutes[LOCAL] = 0;
    this.trustRoutes[REMOTE] = 0;
    this.replicaHead.length = 0;
    this.replicaTail.length = 0;
    this.tableKeys = new Float64Array(INITIAL_TABLE);
    this.tableHeads = new Int32Array(INITIAL_TABLE).fill(NIL);
    this.tableMask = INITIAL_TABLE - 1;
    this.blockCount = 0;
    this.replicas.reset();
  }

  protected growPool(size: number): void {
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
    this.slotLearnedAt = wasEmpty ? new Float64Array(size) : copyF64(this.slotLearnedAt);
    this.slotReplica = wasEmpty ? new Int32Array(size) : copyI32(this.slotReplica);
    this.slotPrev = wasEmpty ? new Int32Array(size) : copyI32(this.slotPrev);
    this.slotNext = wasEmpty ? new Int32Array(size) : copyI32(this.slotNext);
    this.slotReplicaPrev = wasEmpty ? new Int32Array(size) : copyI32(this.slotReplicaPrev);
    this.slotReplicaNext = wasEmpty ? new Int32Array(size) : copyI32(this.slotReplicaNext);
    this.blockNext = wasEmpty ? new Int32Array(size) : copyI32(this.blockNext);
    const trust = new Uint8Array(size);
    if (!wasEmpty) trust.set(this.slotTrust.subarray(0, Math.min(this.slotTrust.length, size)));
    this.slotTrust = trust;
    this.slotReplica.fill(NIL, this.poolSize);
    this.poolSize = size;
  }

  // ---------------------------------------------------------------- LRU lists

  /** Puts a route at the front of its trust list and of its replica's list. */
  protected lruPushFront(s: number): void {
    const trust = this.slotTrust[s] as number;
    const head = this.lruHead[trust] as number;
    this.slotPrev[s] = NIL;
    this.slotNext[s] = head;
    if (head !== NIL) this.slotPrev[head] = s;
    else this.lruTail[trust] = s;
    this.lruHead[trust] = s;

    const r = this.slotReplica[s] as number;
    const rHead = this.replicaHead[r] ?? NIL;
    this.slotReplicaPrev[s] = NIL;
    this.slotReplicaNext[s] = rHead;
    if (rHead !== NIL) this.slotReplicaPrev[rHead] = s;
    else this.replicaTail[r] = s;
    this.replicaHead[r] = s;
  }

  /** Takes a route off both its lists. */
  protected lruUnlink(s: number): void {
    const trust = this.slotTrust[s] as number;
    const prev = this.slotPrev[s] as number;
    const next = this.slotNext[s] as number;
    if (prev !== NIL) this.slotNext[prev] = next;
    else this.lruHead[trust] = next;
    if (next !== NIL) this.slotPrev[next] = prev;
    else this.lruTail[trust] = prev;

    const r = this.slotReplica[s] as number;
    const rPrev = this.slotReplicaPrev[s] as number;
    const rNext = this.slotReplicaNext[s] as number;
    if (rPrev !== NIL) this.slotReplicaNext[rPrev] = rNext;
    else this.replicaHead[r] = rNext;
    if (rNext !== NIL) this.slotReplicaPrev[rNext] = rPrev;
    else this.replicaTail[r] = rPrev;
  }

  // ---------------------------------------------------------------- routes

  /** The slot of replica number `r`'s route for `key`, or NIL. */
  protected findRoute(key: number, r: number): number {
    const t = this.findTable(key);
    if (t < 0) return NIL;
    for (let s = this.tableHeads[t] as number; s !== NIL; s = this.blockNext[s] as number) {
      if (this.slotReplica[s] === r) return s;
    }
    return NIL;
  }

  /** Routes stored for one block (for debugging and tests). */
  routesOf(key: BlockKey): RouteInfo[] {
    const t = this.findTable(key);
    const out: RouteInfo[] = [];
    if (t < 0) return out;
    for (let s = this.tableHeads[t] as number; s !== NIL; s = this.blockNext[s] as number) {
      out.push({
        replicaId: this.replicas.name(this.slotReplica[s] as number),
        learnedAt: this.slotLearnedAt[s] as number,
        trust: this.slotTrust[s] === LOCAL ? "LOCAL" : "REMOTE",
      });
    }
    return out;
  }

  /** Takes a route off its block's chain (the block goes with its last route) and both its lists,
   * and frees its slot. */
  protected removeRoute(s: number): void {
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

  // ---------------------------------------------------------------- block table

  /** Table index of `key`, or -1. */
  protected findTable(key: number): number {
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

  protected insertTable(key: number): number {
    // Keep the load factor ≤ 1/2 so probes stay short.
    if ((this.blockCount + 1) * 2 > this.tableKeys.length) this.growTable();
    const mask = this.tableMask;
    let i = tableHash(key) & mask;
    while (this.tableHeads[i] !== NIL) i = (i + 1) & mask;
    this.tableKeys[i] = key;
    this.blockCount++;
    return i;
  }

  protected deleteTable(hole: number): void {
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

  protected growTable(): void {
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

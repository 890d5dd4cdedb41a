// The PrefixIndex's route storage: one slot per ROUTE, a (block, replica) pair, in a struct of typed
// arrays (no object per route), grown by doubling up to a fixed capacity. Every live route is on two
// intrusive doubly linked LRU lists, most recent first:
//   - its trust level's list (LOCAL or REMOTE), which global capacity eviction takes from, REMOTE
//     tail first;
//   - its replica's list, which the replica's own budget (its engine's cache size) evicts from, so
//     one replica's traffic never pushes out another replica's routes.
// A route's `learnedAt` is both its recency and its age: every touch re-learns it. Route counts per
// replica live in ReplicaIds (replica-ids.ts), which the caller keeps in step.
//
// Bytes per slot: key 8 + learnedAt 8 + replica 4 + four list links 16 + block chain 4 + trust 1 = 41.

import { NIL } from "./block-table";

export const LOCAL = 0;
export const REMOTE = 1;

export class RoutePool {
  /** Slots allocated so far (grows by doubling up to `capacity`). */
  size = 0;
  /** Slots ever handed out (high-water mark). */
  private used = 0;
  /** Free list, threaded through `blockNext`. */
  private free = NIL;
  key: Float64Array = new Float64Array(0);
  learnedAt: Float64Array = new Float64Array(0);
  /** Replica number; NIL when the slot is free. */
  replica: Int32Array = new Int32Array(0);
  trust: Uint8Array = new Uint8Array(0);
  /** Trust list links: towards the more / less recent route. */
  private prev: Int32Array = new Int32Array(0);
  next: Int32Array = new Int32Array(0);
  /** Replica list links. */
  private replicaPrev: Int32Array = new Int32Array(0);
  replicaNext: Int32Array = new Int32Array(0);
  /** Next route of the same block. */
  blockNext: Int32Array = new Int32Array(0);

  /** Most / least recent route per trust level. */
  readonly head = new Int32Array([NIL, NIL]);
  readonly tail = new Int32Array([NIL, NIL]);
  readonly trustCount = [0, 0];
  /** Per replica number: most / least recent route. */
  readonly replicaHead: number[] = [];
  readonly replicaTail: number[] = [];

  constructor(
    readonly capacity: number,
    private readonly initialSize: number,
  ) {
    this.reset();
  }

  reset(): void {
    this.size = 0;
    this.used = 0;
    this.free = NIL;
    this.grow(Math.min(this.initialSize, this.capacity));
    this.head.fill(NIL);
    this.tail.fill(NIL);
    this.trustCount[LOCAL] = 0;
    this.trustCount[REMOTE] = 0;
    this.replicaHead.length = 0;
    this.replicaTail.length = 0;
  }

  /** A free slot, or NIL when all `capacity` slots hold routes (the caller evicts, then retries). */
  take(): number {
    if (this.free !== NIL) {
      const s = this.free;
      this.free = this.blockNext[s] as number;
      return s;
    }
    if (this.used < this.size) return this.used++;
    if (this.size < this.capacity) {
      this.grow(Math.min(this.capacity, this.size * 2));
      return this.used++;
    }
    return NIL;
  }

  /** Fills a taken slot and puts it at the front of both its lists. */
  fill(s: number, key: number, replica: number, trust: number, now: number): void {
    this.key[s] = key;
    this.replica[s] = replica;
    this.learnedAt[s] = now;
    this.trust[s] = trust;
    this.trustCount[trust]!++;
    this.pushFront(s);
  }

  /** Re-learns a live route at `now` (and raises it to LOCAL when `trust` is LOCAL). */
  touch(s: number, trust: number, now: number): void {
    this.unlink(s);
    // Own observations outrank a peer's: a LOCAL route is never downgraded to REMOTE.
    if (trust === LOCAL && this.trust[s] === REMOTE) {
      this.trustCount[REMOTE]!--;
      this.trustCount[LOCAL]!++;
      this.trust[s] = LOCAL;
    }
    this.learnedAt[s] = now;
    this.pushFront(s);
  }

  /** Unlinks a live route from both lists and frees its slot; returns its replica number. */
  release(s: number): number {
    this.unlink(s);
    this.trustCount[this.trust[s] as number]!--;
    const r = this.replica[s] as number;
    this.replica[s] = NIL;
    this.blockNext[s] = this.free;
    this.free = s;
    return r;
  }

  private pushFront(s: number): void {
    const trust = this.trust[s] as number;
    const head = this.head[trust] as number;
    this.prev[s] = NIL;
    this.next[s] = head;
    if (head !== NIL) this.prev[head] = s;
    else this.tail[trust] = s;
    this.head[trust] = s;

    const r = this.replica[s] as number;
    const rHead = this.replicaHead[r] ?? NIL;
    this.replicaPrev[s] = NIL;
    this.replicaNext[s] = rHead;
    if (rHead !== NIL) this.replicaPrev[rHead] = s;
    else this.replicaTail[r] = s;
    this.replicaHead[r] = s;
  }

  private unlink(s: number): void {
    const trust = this.trust[s] as number;
    const prev = this.prev[s] as number;
    const next = this.next[s] as number;
    if (prev !== NIL) this.next[prev] = next;
    else this.head[trust] = next;
    if (next !== NIL) this.prev[next] = prev;
    else this.tail[trust] = prev;

    const r = this.replica[s] as number;
    const rPrev = this.replicaPrev[s] as number;
    const rNext = this.replicaNext[s] as number;
    if (rPrev !== NIL) this.replicaNext[rPrev] = rNext;
    else this.replicaHead[r] = rNext;
    if (rNext !== NIL) this.replicaPrev[rNext] = rPrev;
    else this.replicaTail[r] = rPrev;
  }

  private grow(size: number): void {
    const f64 = (old: Float64Array): Float64Array => {
      const next = new Float64Array(size);
      next.set(old.subarray(0, Math.min(old.length, size)));
      return next;
    };
    const i32 = (old: Int32Array): Int32Array => {
      const next = new Int32Array(size);
      next.set(old.subarray(0, Math.min(old.length, size)));
      return next;
    };
    const fresh = this.size === 0;
    this.key = fresh ? new Float64Array(size) : f64(this.key);
    this.learnedAt = fresh ? new Float64Array(size) : f64(this.learnedAt);
    this.replica = fresh ? new Int32Array(size) : i32(this.replica);
    this.prev = fresh ? new Int32Array(size) : i32(this.prev);
    this.next = fresh ? new Int32Array(size) : i32(this.next);
    this.replicaPrev = fresh ? new Int32Array(size) : i32(this.replicaPrev);
    this.replicaNext = fresh ? new Int32Array(size) : i32(this.replicaNext);
    this.blockNext = fresh ? new Int32Array(size) : i32(this.blockNext);
    const trust = new Uint8Array(size);
    if (!fresh) trust.set(this.trust.subarray(0, Math.min(this.trust.length, size)));
    this.trust = trust;
    this.replica.fill(NIL, this.size);
    this.size = size;
  }
}

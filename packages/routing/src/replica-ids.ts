// The prefix index's replica (or peer) ids as small integers, so a route stores an Int32 rather than
// a string. An id's number is recycled when its last route goes, so ids that come and go (replicas
// replaced, peers rotating) cannot grow the tables. A number being learned into is pinned: it is not
// recycled while a learn() that evicts its own routes is still running.
const NIL = -1; // as in prefix-index.ts

export class ReplicaIds {
  private ids: (string | undefined)[] = [];
  private readonly numbers = new Map<string, number>();
  private routes: number[] = [];
  private free: number[] = [];
  private pinned = NIL;

  reset(): void {
    this.ids = [];
    this.numbers.clear();
    this.routes = [];
    this.free = [];
    this.pinned = NIL;
  }

  /** Ids with at least one route. */
  get size(): number {
    return this.numbers.size;
  }

  /** The number of a known id, or undefined. */
  find(id: string): number | undefined {
    return this.numbers.get(id);
  }

  /** The id of a number in use. */
  name(r: number): string {
    return this.ids[r] as string;
  }

  /** The number of `id`, assigned (and pinned) for a learn. Call unpin() when the learn is done. */
  pin(id: string): number {
    let r = this.numbers.get(id);
    if (r === undefined) {
      r = this.free.pop() ?? this.ids.length;
      this.ids[r] = id;
      this.routes[r] = 0;
      this.numbers.set(id, r);
    }
    this.pinned = r;
    return r;
  }

  unpin(r: number): void {
    this.pinned = NIL;
    this.releaseIfEmpty(r);
  }

  routeAdded(r: number): void {
    this.routes[r] = (this.routes[r] ?? 0) + 1;
  }

  routeRemoved(r: number): void {
    this.routes[r] = (this.routes[r] ?? 1) - 1;
    this.releaseIfEmpty(r);
  }

  private releaseIfEmpty(r: number): void {
    if (r === this.pinned || this.routes[r] !== 0) return;
    const id = this.ids[r];
    if (id === undefined) return;
    this.numbers.delete(id);
    this.ids[r] = undefined;
    this.free.push(r);
  }
}

// Hash-based policies: session-affinity (hash mod N) and consistent-hash (ring with virtual nodes).

import { RoutingInputError } from "../errors";
import { hashString, hashString32 } from "../hash";
import type { CandidateView } from "../types";
import { type Policy, type PolicyOptions, type Prepared, decidePicked, eligibleIndices, prepare } from "./common";

/** A ring of `virtualNodes` points per target. Owners are indices into the id list it was built from. */
export class HashRing {
  readonly ids: readonly string[];
  private readonly points: Uint32Array;
  private readonly owners: Int32Array;

  constructor(ids: readonly string[], virtualNodes = 100) {
    if (!Number.isInteger(virtualNodes) || virtualNodes <= 0) {
      throw new RoutingInputError("virtualNodes", `must be a positive integer, got ${virtualNodes}`);
    }
    if (ids.length === 0) throw new RoutingInputError("ids", "a hash ring needs at least one target");
    this.ids = [...ids];
    const total = ids.length * virtualNodes;
    const entries: { point: number; owner: number; tie: string }[] = new Array(total);
    let k = 0;
    for (let o = 0; o < ids.length; o++) {
      for (let v = 0; v < virtualNodes; v++) {
        entries[k++] = { point: hashString32(`${ids[o]}#${v}`), owner: o, tie: ids[o] as string };
      }
    }
    // Tie on equal points by id so the ring does not depend on the order ids were given in.
    entries.sort((a, b) => a.point - b.point || (a.tie < b.tie ? -1 : a.tie > b.tie ? 1 : 0));
    this.points = new Uint32Array(total);
    this.owners = new Int32Array(total);
    for (let i = 0; i < total; i++) {
      const e = entries[i] as { point: number; owner: number };
      this.points[i] = e.point;
      this.owners[i] = e.owner;
    }
  }

  /** Owner index of the first point clockwise from hash(key) whose owner is usable; -1 if none. */
  lookup(key: string, usable: (owner: number) => boolean = () => true): number {
    const h = hashString32(key);
    const points = this.points;
    let lo = 0;
    let hi = points.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((points[mid] as number) < h) lo = mid + 1;
      else hi = mid;
    }
    for (let step = 0; step < points.length; step++) {
      const owner = this.owners[(lo + step) % points.length] as number;
      if (usable(owner)) return owner;
    }
    return -1;
  }
}

/** Rings per candidate-id list, so steady-state picks never rebuild. Bounded: flapping sets cannot
 * grow it without limit. */
export class RingCache {
  private readonly rings = new Map<string, HashRing>();
  constructor(
    private readonly virtualNodes: number,
    private readonly maxRings = 32,
  ) {}

  get(ids: readonly string[]): HashRing {
    const cacheKey = ids.join("\u0000");
    let ring = this.rings.get(cacheKey);
    if (ring === undefined) {
      if (this.rings.size >= this.maxRings) this.rings.clear();
      ring = new HashRing(ids, this.virtualNodes);
      this.rings.set(cacheKey, ring);
    }
    return ring;
  }
}

/**
 * Consistent-hash pick among `allowed` candidates of `p`. Skips unavailable targets: unhealthy, and
 * full unless every allowed one is full. Returns the candidate index.
 */
export function ringPick(p: Prepared, cache: RingCache, allowed: readonly boolean[] = p.eligible): number {
  const ids = p.candidates.map((c) => c.id);
  const ring = cache.get(ids);
  const anyNotFull = p.candidates.some((c, i) => allowed[i] && !c.full);
  const owner = ring.lookup(p.request.sessionKey, (o) => allowed[o] === true && (!anyNotFull || !(p.candidates[o] as CandidateView).full));
  if (owner < 0) throw new RoutingInputError("candidates", "no eligible candidate on the hash ring");
  return owner;
}

/** Simple session affinity: hash(sessionKey) mod N over the eligible candidates sorted by id. */
export function createSessionAffinityPolicy(): Policy {
  return {
    name: "session-affinity",
    usesCostWeights: false,
    select(request, candidates, ctx) {
      const p = prepare(request, candidates, ctx);
      const order = eligibleIndices(p);
      // Sorting by id makes the mapping independent of the order candidates arrive in.
      order.sort((a, b) => {
        const x = (candidates[a] as CandidateView).id;
        const y = (candidates[b] as CandidateView).id;
        return x < y ? -1 : x > y ? 1 : 0;
      });
      const slot = hashString(request.sessionKey) % order.length;
      return decidePicked(p, order[slot] as number);
    },
  };
}

export function createConsistentHashPolicy(options: PolicyOptions = {}): Policy {
  const cache = new RingCache(options.virtualNodes ?? 100);
  return {
    name: "consistent-hash",
    usesCostWeights: false,
    select(request, candidates, ctx) {
      const p = prepare(request, candidates, ctx);
      return decidePicked(p, ringPick(p, cache));
    },
  };
}

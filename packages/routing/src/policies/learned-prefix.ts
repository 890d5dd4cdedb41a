// learned-prefix (Ranvier-style): follow the longest learned route, fall back to consistent hashing
// when nothing is learned, and disobey the route when its target is overloaded.

import { RoutingInputError } from "../errors";
import { hashString } from "../hash";
import type { CandidateView } from "../types";
import { type Policy, type PolicyOptions, argminRandomTie, decide, prepare, requestLoad } from "./common";
import { RingCache, ringPick } from "./hashing";

function median(values: number[]): number {
  values.sort((a, b) => a - b);
  const mid = values.length >> 1;
  return values.length % 2 === 1 ? (values[mid] as number) : ((values[mid - 1] as number) + (values[mid] as number)) / 2;
}

export function createLearnedPrefixPolicy(options: PolicyOptions = {}): Policy {
  const factor = options.overloadFactor ?? 2;
  if (!Number.isFinite(factor) || factor <= 0) throw new RoutingInputError("options.overloadFactor", `must be a finite number > 0, got ${factor}`);
  const cache = new RingCache(options.virtualNodes ?? 100);
  return {
    name: "learned-prefix",
    usesCostWeights: false,
    select(request, candidates, ctx) {
      const p = prepare(request, candidates, ctx);
      let target: number;
      let reason: string | undefined;
      if (p.maxDepth > 0) {
        const tied: number[] = [];
        for (let i = 0; i < candidates.length; i++) if (p.eligible[i] && p.depths[i] === p.maxDepth) tied.push(i);
        // Several replicas hold the same deepest route: a stable per-session pick keeps affinity.
        target = tied.length === 1 ? (tied[0] as number) : (tied[hashString(request.sessionKey) % tied.length] as number);
      } else {
        target = ringPick(p, cache);
        reason = "fallback:consistent-hash (no learned route)";
      }
      const inFlight: number[] = [];
      for (let i = 0; i < candidates.length; i++) if (p.eligible[i]) inFlight.push((candidates[i] as CandidateView).inFlight);
      // A median of 0 (idle fleet) would divert on the first in-flight request and destroy affinity;
      // flooring it at 1 means "more than `factor` requests above an idle fleet".
      const threshold = factor * Math.max(1, median(inFlight));
      const scores = candidates.map((_, i) => p.maxDepth - Math.min(p.maxDepth, p.depths[i] as number));
      if ((candidates[target] as CandidateView).inFlight > threshold) {
        const loads = candidates.map(requestLoad);
        const diverted = argminRandomTie(loads, p.eligible, ctx.rng);
        if (diverted !== target) {
          return decide(p, scores, diverted, `override:least-loaded (target ${(candidates[target] as CandidateView).id} in-flight > ${factor}x median)`);
        }
      }
      return decide(p, scores, target, reason);
    },
  };
}

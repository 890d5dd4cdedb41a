// prefix-cache (AIBrix-style baseline): AIBrix's prefix-cache router in its standard mode (the
// router's own prefix-hash table), following vllm-project/aibrix
// pkg/plugins/gateway/algorithms/prefix_cache.go:
//  - load gate (getTargetPodOnLoadImbalance): when the running-request spread over the ready pods is
//    above defaultPodRunningRequestImbalanceAbsCount (8), least-request, prefix ignored;
//  - otherwise (getTargetPodFromMatchedPodsFromCounts): every pod with a prefix match, sorted by match
//    percentage descending, then running requests ascending; the first whose running count is
//    <= mean + factor·σ of the ready pods' counts wins (defaultStandardDeviationFactor 1,
//    AIBRIX_PREFIX_CACHE_STANDARD_DEVIATION_FACTOR); least-request only when no matched pod qualifies
//    or nothing matches.
// Match percentage here is matched blocks of the LB's prefix index over the prompt's blocks; running
// requests are the larger of this LB's in-flight count and the scraped running count.

import { RoutingInputError } from "../errors";
import { MISSING_BLOCK_WEIGHT, type Policy, type PolicyOptions, argminRandomTie, decide, leastRequestIndex, prepare, requestLoad } from "./common";

export function createPrefixCachePolicy(options: PolicyOptions = {}): Policy {
  const spreadThreshold = options.spreadThreshold ?? 8;
  if (!Number.isFinite(spreadThreshold) || spreadThreshold < 0) {
    throw new RoutingInputError("options.spreadThreshold", `must be a finite number >= 0, got ${spreadThreshold}`);
  }
  const sdFactor = options.standardDeviationFactor ?? 1;
  if (typeof sdFactor !== "number" || !Number.isFinite(sdFactor) || sdFactor < 0) {
    throw new RoutingInputError("options.standardDeviationFactor", `must be a finite number >= 0, got ${sdFactor}`);
  }
  return {
    name: "prefix-cache",
    usesCostWeights: false,
    select(request, candidates, ctx) {
      const p = prepare(request, candidates, ctx);
      const loads = candidates.map(requestLoad);
      let min = Infinity;
      let max = -Infinity;
      let sum = 0;
      let count = 0;
      for (let i = 0; i < loads.length; i++) {
        if (!p.eligible[i]) continue;
        const l = loads[i] as number;
        if (l < min) min = l;
        if (l > max) max = l;
        sum += l;
        count++;
      }
      if (max - min > spreadThreshold) {
        const lr = leastRequestIndex(p, ctx.rng);
        return decide(p, lr.scores, lr.index, "fallback:least-request (running spread > threshold)");
      }
      if (p.maxDepth === 0) {
        const lr = leastRequestIndex(p, ctx.rng);
        return decide(p, lr.scores, lr.index, "fallback:least-request (no prefix match)");
      }
      const mean = sum / count;
      let variance = 0;
      for (let i = 0; i < loads.length; i++) if (p.eligible[i]) variance += ((loads[i] as number) - mean) ** 2;
      const ceiling = mean + sdFactor * Math.sqrt(variance / count);
      // The first of (match desc, running asc) under the ceiling: the deepest match that has a pod
      // under the ceiling, and its least-loaded pod there (exact ties at random).
      let depth = 0;
      for (let i = 0; i < loads.length; i++) {
        const d = p.depths[i] as number;
        if (p.eligible[i] && d > depth && (loads[i] as number) <= ceiling) depth = d;
      }
      if (depth === 0) {
        const lr = leastRequestIndex(p, ctx.rng);
        return decide(p, lr.scores, lr.index, "fallback:least-request (every matched pod overloaded)");
      }
      const allowed = p.eligible.map((ok, i) => ok && p.depths[i] === depth && (loads[i] as number) <= ceiling);
      const scores = loads.map((l, i) => (p.maxDepth - (p.depths[i] as number)) * MISSING_BLOCK_WEIGHT + l);
      return decide(p, scores, argminRandomTie(loads, allowed, ctx.rng));
    },
  };
}

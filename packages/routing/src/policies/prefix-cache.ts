// prefix-cache (AIBrix-style baseline): prefix affinity unless load is visibly imbalanced.

import { RoutingInputError } from "../errors";
import { MISSING_BLOCK_WEIGHT, type Policy, type PolicyOptions, argminRandomTie, decide, leastRequestIndex, prepare, requestLoad } from "./common";

export function createPrefixCachePolicy(options: PolicyOptions = {}): Policy {
  const spreadThreshold = options.spreadThreshold ?? 8;
  if (!Number.isFinite(spreadThreshold) || spreadThreshold < 0) {
    throw new RoutingInputError("options.spreadThreshold", `must be a finite number >= 0, got ${spreadThreshold}`);
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
      const ceiling = mean + 2 * Math.sqrt(variance / count);
      const allowed = p.eligible.map((ok, i) => ok && p.depths[i] === p.maxDepth && (loads[i] as number) <= ceiling);
      if (!allowed.includes(true)) {
        const lr = leastRequestIndex(p, ctx.rng);
        return decide(p, lr.scores, lr.index, "fallback:least-request (longest match overloaded)");
      }
      const scores = loads.map((l, i) => (p.maxDepth - (p.depths[i] as number)) * MISSING_BLOCK_WEIGHT + l);
      return decide(p, scores, argminRandomTie(loads, allowed, ctx.rng));
    },
  };
}

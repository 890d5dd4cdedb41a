// SkyLB: longest prefix match among the available candidates, ties (and no match) → least load.
// Local-first and peer forwarding happen before this, in decideAvailability().

import { MISSING_BLOCK_WEIGHT, type Policy, argminRandomTie, decide, prepare, requestLoad } from "./common";

export function createSkyLbPolicy(): Policy {
  return {
    name: "skylb",
    usesCostWeights: false,
    select(request, candidates, ctx) {
      const p = prepare(request, candidates, ctx);
      // SkyLB's traversal skips unavailable targets; if the caller passed full ones, prefer the rest.
      const anyNotFull = candidates.some((c, i) => p.eligible[i] && !c.full);
      let maxDepth = 0;
      for (let i = 0; i < candidates.length; i++) {
        if (p.eligible[i] && (!anyNotFull || !candidates[i]!.full) && (p.depths[i] as number) > maxDepth) maxDepth = p.depths[i] as number;
      }
      const allowed = p.eligible.map((ok, i) => ok && (!anyNotFull || !candidates[i]!.full) && p.depths[i] === maxDepth);
      const loads = candidates.map(requestLoad);
      const scores = loads.map((l, i) => (maxDepth - Math.min(maxDepth, p.depths[i] as number)) * MISSING_BLOCK_WEIGHT + l);
      const choice = argminRandomTie(loads, allowed, ctx.rng);
      return decide(p, scores, choice, maxDepth === 0 ? "fallback:least-load (no prefix match)" : undefined);
    },
  };
}

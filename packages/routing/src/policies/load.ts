// Load baselines: least-load (GORGO) and least-request (GORGO, SkyLB "LL").

import type { CandidateView } from "../types";
import { type Policy, argminRandomTie, decide, leastRequestIndex, prepare } from "./common";

/** min(running + waiting + used KV tokens from the last scrape + this LB's queued tokens). The
 * units mix requests and tokens exactly as the baseline does; tokens dominate. */
export function createLeastLoadPolicy(): Policy {
  return {
    name: "least-load",
    usesCostWeights: false,
    select(request, candidates, ctx) {
      const p = prepare(request, candidates, ctx);
      const scores = candidates.map((c: CandidateView) => {
        const s = c.scraped;
        return (s ? s.running + s.waiting + s.usedTokens : 0) + c.queuedTokens;
      });
      return decide(p, scores, argminRandomTie(scores, p.eligible, ctx.rng));
    },
  };
}

/** Fewest in-flight requests: max(this LB's in-flight, scraped running), ties at random. */
export function createLeastRequestPolicy(): Policy {
  return {
    name: "least-request",
    usesCostWeights: false,
    select(request, candidates, ctx) {
      const p = prepare(request, candidates, ctx);
      const { index, scores } = leastRequestIndex(p, ctx.rng);
      return decide(p, scores, index);
    },
  };
}

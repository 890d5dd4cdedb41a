// GORGO: argmin of W_rtt·rtt_ms + W_queue·queued_tokens + uncached_tokens (W_prefill = 1).
// The candidate's pendingPrefillTokens is deliberately not a term: three ways of adding it were
// measured and each lost materially on some scenario (packages/sim/README.md, "Gorgo against the
// peer routers").

import type { CandidateView } from "../types";
import { type Policy, argminRandomTie, decide, prepare } from "./common";

export function createGorgoPolicy(): Policy {
  return {
    name: "gorgo",
    usesCostWeights: true,
    select(request, candidates, ctx) {
      const p = prepare(request, candidates, ctx);
      const { rtt, queue } = ctx.weights;
      const scores = new Array<number>(candidates.length);
      for (let i = 0; i < candidates.length; i++) {
        const c = candidates[i] as CandidateView;
        const uncached = request.inputTokens - (p.depths[i] as number) * request.tokensPerBlock;
        scores[i] = rtt * c.rttMs + queue * c.queuedTokens + (uncached > 0 ? uncached : 0);
      }
      return decide(p, scores, argminRandomTie(scores, p.eligible, ctx.rng));
    },
  };
}

// Hand-built fleet states for the policy tests: candidates, requests, a context, and the dispatch /
// first-token / complete events the LB core reports. Imported by *.test.ts only.

import { PrefixIndex } from "../prefix-index";
import { createRng } from "../rng";
import { type CandidateView, DEFAULT_WEIGHTS, type Decision, type RequestView, type Rng } from "../types";
import type { Policy, PolicyContext } from "./common";

export function candidate(id: string, over: Partial<CandidateView> = {}): CandidateView {
  return { id, region: "us-ashburn", rttMs: 10, inFlight: 0, queuedTokens: 0, pendingPrefillTokens: 0, scraped: null, full: false, healthy: true, ...over };
}

/** A prompt of `blocks` chained keys (distinct per `salt`), 16 tokens per block, unless overridden. */
export function request(blocks: number, over: Partial<RequestView> = {}, salt = 1): RequestView {
  const keys = Array.from({ length: blocks }, (_, i) => salt * 1_000_000 + i);
  return { keys, inputTokens: blocks * 16, tokensPerBlock: 16, sessionKey: "s", clientRegion: "us-ashburn", ...over };
}

export function context(now = 1000, seed = 1): PolicyContext {
  return { index: new PrefixIndex({ capacityBlocks: 1024 }), weights: { ...DEFAULT_WEIGHTS }, rng: createRng(seed), now };
}

/** An Rng that returns the given values in turn (then repeats the last). */
export function fixedRng(...values: number[]): Rng {
  let i = 0;
  return { next: () => values[Math.min(i++, values.length - 1)] as number };
}

/** The decision a dispatch event carries when the test places a request by hand. */
export function placed(replicaId: string, matchedBlocks = 0): Decision {
  return { choice: replicaId, scores: [{ id: replicaId, score: 0, matchedBlocks }], predictedCachedTokens: 0 };
}

/** Reports a dispatch of `req` to `replicaId` as the LB core does after select(). */
export function dispatch(policy: Policy, requestId: string, req: RequestView, replicaId: string, now = 0, decision = placed(replicaId)): void {
  policy.observe?.({ kind: "dispatch", requestId, replicaId, request: req, decision, now });
}

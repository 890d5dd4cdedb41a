// Shared policy plumbing: the Policy interface, validation + index match done once per decision,
// tie-breaking and the Decision record.

import { EXCLUDED_SCORE, RoutingInputError, describe, requireFiniteNumber } from "../errors";
import type { PrefixIndex } from "../prefix-index";
import type { CandidateView, Decision, PolicyName, RequestView, Rng, Weights } from "../types";
import { validateCandidates, validateRequest, validateWeights } from "../validate";

export interface PolicyContext {
  index: PrefixIndex;
  weights: Weights;
  rng: Rng;
  /** Caller's clock in ms (wall clock live, virtual clock in the simulator). */
  now: number;
}

export interface Policy {
  readonly name: PolicyName;
  /**
   * Whether the decision reads the cost weights (ctx.weights: W_rtt, W_queue). The tuner tunes only
   * such a policy: for any other, every weight gives the same decisions, so a trial measures noise
   * and its random walk ends at a bound (docs/ARCHITECTURE.md, "The tuner path").
   */
  readonly usesCostWeights: boolean;
  select(request: RequestView, candidates: readonly CandidateView[], ctx: PolicyContext): Decision;
}

export interface PolicyOptions {
  /** consistent-hash / learned-prefix fallback: virtual nodes per target. Default 100. */
  virtualNodes?: number;
  /** prefix-cache: running-request spread above which it falls back to least-request. Default 8. */
  spreadThreshold?: number;
  /** learned-prefix: divert when the target's in-flight > factor × median. Default 2. */
  overloadFactor?: number;
}

/** What every policy needs after validation: per-candidate match depth and eligibility. */
export interface Prepared {
  request: RequestView;
  candidates: readonly CandidateView[];
  /** Matched blocks per candidate, candidate order. */
  depths: number[];
  /** Healthy candidates: the only ones a policy may pick. */
  eligible: boolean[];
  /** Deepest match among eligible candidates. */
  maxDepth: number;
}

/** Validates everything and matches the prompt against the index for the candidates. */
export function prepare(request: RequestView, candidates: readonly CandidateView[], ctx: PolicyContext): Prepared {
  if (ctx === null || typeof ctx !== "object") throw new RoutingInputError("ctx", `must be an object, got ${describe(ctx)}`);
  validateRequest(request);
  validateCandidates(candidates);
  validateWeights(ctx.weights);
  requireFiniteNumber("ctx.now", ctx.now);
  if (!ctx.rng || typeof ctx.rng.next !== "function") throw new RoutingInputError("ctx.rng", "must be an Rng with next()");
  if (!ctx.index || typeof ctx.index.match !== "function") throw new RoutingInputError("ctx.index", "must be a PrefixIndex");
  const n = candidates.length;
  const ids = new Array<string>(n);
  const eligible = new Array<boolean>(n);
  let anyEligible = false;
  for (let i = 0; i < n; i++) {
    const c = candidates[i] as CandidateView;
    ids[i] = c.id;
    // Defence in depth: callers should pass only healthy candidates, but never pick an unhealthy one.
    eligible[i] = c.healthy === true;
    if (eligible[i]) anyEligible = true;
  }
  if (!anyEligible) throw new RoutingInputError("candidates", "no healthy candidate: refusing to route to an unhealthy replica");
  const depths = new Array<number>(n);
  let maxDepth = 0;
  if (request.keys.length > 0) {
    const { depthByReplica } = ctx.index.match(request.keys, ctx.now, ids);
    for (let i = 0; i < n; i++) {
      const d = depthByReplica.get(ids[i] as string) ?? 0;
      depths[i] = d;
      if (eligible[i] && d > maxDepth) maxDepth = d;
    }
  } else {
    depths.fill(0);
  }
  return { request, candidates, depths, eligible, maxDepth };
}

/** Requests on the replica: the max of this LB's in-flight count and the last scraped running count. */
export function requestLoad(c: CandidateView): number {
  const running = c.scraped ? c.scraped.running : 0;
  return c.inFlight > running ? c.inFlight : running;
}

/** Index of the lowest score among `allowed` candidates; exact ties broken uniformly via rng. */
export function argminRandomTie(scores: readonly number[], allowed: readonly boolean[], rng: Rng): number {
  let best = -1;
  let bestScore = Infinity;
  let ties = 0;
  for (let i = 0; i < scores.length; i++) {
    if (!allowed[i]) continue;
    const s = scores[i] as number;
    if (best === -1 || s < bestScore - tolerance(bestScore)) {
      best = i;
      bestScore = s;
      ties = 1;
    } else if (Math.abs(s - bestScore) <= tolerance(bestScore)) {
      // Reservoir sampling over the tied set: each tied candidate ends up chosen with prob 1/ties.
      ties++;
      if (rng.next() * ties < 1) best = i;
    }
  }
  if (best === -1) throw new RoutingInputError("candidates", "no eligible candidate");
  return best;
}

/** Floating-point slack for "equal" scores (sums of products of the same inputs can differ in the last ulp). */
function tolerance(x: number): number {
  return 1e-9 * Math.max(1, Math.abs(x));
}

function predictedCached(p: Prepared, i: number): number {
  const cached = (p.depths[i] as number) * p.request.tokensPerBlock;
  return cached < p.request.inputTokens ? cached : p.request.inputTokens;
}

/** Builds the Decision; ineligible candidates get EXCLUDED_SCORE. */
export function decide(p: Prepared, scores: readonly number[], choice: number, reason?: string): Decision {
  const out = new Array(p.candidates.length);
  for (let i = 0; i < p.candidates.length; i++) {
    out[i] = {
      id: (p.candidates[i] as CandidateView).id,
      score: p.eligible[i] ? (scores[i] as number) : EXCLUDED_SCORE,
      matchedBlocks: p.depths[i] as number,
    };
  }
  const decision: Decision = {
    choice: (p.candidates[choice] as CandidateView).id,
    scores: out,
    predictedCachedTokens: predictedCached(p, choice),
  };
  if (reason !== undefined) decision.reason = reason;
  return decision;
}

/** least-request over the allowed set: fewest requests, ties at random. */
export function leastRequestIndex(p: Prepared, rng: Rng, allowed: readonly boolean[] = p.eligible): { index: number; scores: number[] } {
  const scores = p.candidates.map(requestLoad);
  return { index: argminRandomTie(scores, allowed, rng), scores };
}

/** Lexicographic score for prefix policies: fewer missing blocks first, then lower load. Loads are
 * request counts, far below the multiplier. */
export const MISSING_BLOCK_WEIGHT = 1e6;

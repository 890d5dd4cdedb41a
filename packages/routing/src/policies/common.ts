// Shared policy plumbing: the Policy interface, validation + index match done once per decision,
// tie-breaking and the Decision record.

import { EXCLUDED_SCORE, RoutingInputError, describe, requireFiniteNumber } from "../errors";
import { PrefixIndex, type PrefixMatcher } from "../prefix-index";
import type { PrefixIndexOptions } from "../prefix-index-types";
import type { CandidateView, Decision, PolicyName, RequestView, Rng, Weights } from "../types";
import { validateBlockKeys, validateCandidates, validateRequest, validateWeights } from "../validate";
import type { DynamoKvOptions, LlmdOptions, SglangCacheAwareOptions } from "./peer-options";

export interface PolicyContext {
  /** The LB's PrefixIndex (or, in the simulator, an oracle over the engines' true caches). */
  index: PrefixMatcher;
  weights: Weights;
  rng: Rng;
  /** Caller's clock in ms (wall clock live, virtual clock in the simulator). */
  now: number;
}

/**
 * What the LB core tells a policy about the requests it placed. Policies that keep their own state
 * (the peer routers' approximate prefix trees and active-load books) learn from these events only,
 * so the proxy and the simulator teach them identically. `select()` never changes policy state: a
 * decision that is not acted on (a what-if, a retry elsewhere) teaches nothing.
 *  - "dispatch": the request was sent to `replicaId`; `decision` is what select() returned for it.
 *  - "first-token": the first response bytes for the request reached the LB (its prefill is over).
 *  - "complete": the request ended for any reason (success, upstream error, client gone).
 *  - "replica-removed": the replica left the config, or now names another engine (a new URL): what
 *    the policy learned of its cache is gone, as the peer routers drop a worker that leaves.
 * Events for unknown request ids are ignored; "complete" without "first-token" is valid.
 */
export type PolicyEvent =
  | { kind: "dispatch"; requestId: string; replicaId: string; request: RequestView; decision: Decision; now: number }
  | { kind: "first-token"; requestId: string; now: number }
  | { kind: "complete"; requestId: string; now: number }
  | { kind: "replica-removed"; replicaId: string };

export interface Policy {
  readonly name: PolicyName;
  /**
   * Whether the decision reads the cost weights (ctx.weights: W_rtt, W_queue). The tuner tunes only
   * such a policy: for any other, every weight gives the same decisions, so a trial measures noise
   * and its random walk ends at a bound (docs/ARCHITECTURE.md, "The tuner path").
   */
  readonly usesCostWeights: boolean;
  select(request: RequestView, candidates: readonly CandidateView[], ctx: PolicyContext): Decision;
  /** Present on policies with their own state; the LB core calls it for every event above. */
  observe?(event: PolicyEvent): void;
}

export interface PolicyOptions {
  /** consistent-hash / learned-prefix fallback: virtual nodes per target. Default 100. */
  virtualNodes?: number;
  /** prefix-cache: running-request spread above which it falls back to least-request. Default 8. */
  spreadThreshold?: number;
  /** prefix-cache: matched replicas with more running requests than mean + factor·σ are skipped.
   * AIBrix's default, 1. */
  standardDeviationFactor?: number;
  /** learned-prefix: divert when the target's in-flight > factor × median. Default 2. */
  overloadFactor?: number;
  /** Peer routers' parameters; each defaults to its project's default (see the policy's file). */
  sglang?: SglangCacheAwareOptions;
  llmd?: LlmdOptions;
  dynamo?: DynamoKvOptions;
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

/** Validates everything a decision reads and returns which candidates may be picked (the healthy). */
export function checkDecisionInput(request: RequestView, candidates: readonly CandidateView[], ctx: PolicyContext): boolean[] {
  if (ctx === null || typeof ctx !== "object") throw new RoutingInputError("ctx", `must be an object, got ${describe(ctx)}`);
  validateRequest(request);
  validateCandidates(candidates);
  validateWeights(ctx.weights);
  requireFiniteNumber("ctx.now", ctx.now);
  if (!ctx.rng || typeof ctx.rng.next !== "function") throw new RoutingInputError("ctx.rng", "must be an Rng with next()");
  if (!ctx.index || typeof ctx.index.match !== "function") throw new RoutingInputError("ctx.index", "must be a PrefixIndex (an object with match())");
  const n = candidates.length;
  const eligible = new Array<boolean>(n);
  let anyEligible = false;
  for (let i = 0; i < n; i++) {
    const c = candidates[i] as CandidateView;
    // Defence in depth: callers should pass only healthy candidates, but never pick an unhealthy one.
    eligible[i] = c.healthy === true;
    if (eligible[i]) anyEligible = true;
  }
  if (!anyEligible) throw new RoutingInputError("candidates", "no healthy candidate: refusing to route to an unhealthy replica");
  return eligible;
}

/** Validates everything and matches the prompt against the LB's index for the candidates. */
export function prepare(request: RequestView, candidates: readonly CandidateView[], ctx: PolicyContext): Prepared {
  const eligible = checkDecisionInput(request, candidates, ctx);
  const n = candidates.length;
  const ids = new Array<string>(n);
  for (let i = 0; i < n; i++) ids[i] = (candidates[i] as CandidateView).id;
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

/** A Prepared from depths a policy computed against its own state instead of the LB's index. */
export function preparedFrom(request: RequestView, candidates: readonly CandidateView[], eligible: boolean[], depths: number[]): Prepared {
  let maxDepth = 0;
  for (let i = 0; i < depths.length; i++) if (eligible[i] && (depths[i] as number) > maxDepth) maxDepth = depths[i] as number;
  return { request, candidates, depths, eligible, maxDepth };
}

/** Requests on the replica: the max of this LB's in-flight count and the last scraped running count. */
export function requestLoad(c: CandidateView): number {
  const running = c.scraped ? c.scraped.running : 0;
  return c.inFlight > running ? c.inFlight : running;
}

/** Index of the lowest score among `allowed` candidates; exact ties broken uniformly via rng. A score
 * that is not finite (NaN, ±Infinity: an overflowed or undefined cost) ranks below every finite one;
 * only when no allowed score is finite is one of those picked, uniformly. */
export function argminRandomTie(scores: readonly number[], allowed: readonly boolean[], rng: Rng): number {
  let best = -1;
  let bestScore = Infinity;
  let ties = 0;
  let nonFinite = 0;
  for (let i = 0; i < scores.length; i++) {
    if (!allowed[i]) continue;
    const s = scores[i] as number;
    if (!Number.isFinite(s)) {
      nonFinite++;
      continue;
    }
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
  if (best !== -1) return best;
  if (nonFinite === 0) throw new RoutingInputError("candidates", "no eligible candidate");
  let pick = Math.floor(rng.next() * nonFinite);
  for (let i = 0; i < scores.length; i++) {
    if (allowed[i] && !Number.isFinite(scores[i] as number) && pick-- === 0) return i;
  }
  throw new RoutingInputError("candidates", "no eligible candidate"); // unreachable: nonFinite > 0
}

/** Floating-point slack for "equal" scores (sums of products of the same inputs can differ in the last ulp). */
function tolerance(x: number): number {
  return 1e-9 * Math.max(1, Math.abs(x));
}

/** The cached tokens `blocks` leading blocks of a request stand for: capped at the prompt, whose last
 * key may stand for a partial block. */
export function cachedTokensOf(blocks: number, request: Pick<RequestView, "tokensPerBlock" | "inputTokens">): number {
  const cached = blocks * request.tokensPerBlock;
  return cached < request.inputTokens ? cached : request.inputTokens;
}

function predictedCached(p: Prepared, i: number): number {
  return cachedTokensOf(p.depths[i] as number, p.request);
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

/** The Decision of a policy that picks without a cost (a turn, chance, a hash): its choice scores 0
 * and every other candidate 1. */
export function decidePicked(p: Prepared, choice: number): Decision {
  return decide(
    p,
    p.candidates.map((_, i) => (i === choice ? 0 : 1)),
    choice,
  );
}

/** The eligible candidates' indices, in candidate order. */
export function eligibleIndices(p: Prepared): number[] {
  const indices: number[] = [];
  for (let i = 0; i < p.candidates.length; i++) if (p.eligible[i]) indices.push(i);
  return indices;
}

/** least-request over the allowed set: fewest requests, ties at random. */
export function leastRequestIndex(p: Prepared, rng: Rng, allowed: readonly boolean[] = p.eligible): { index: number; scores: number[] } {
  const scores = p.candidates.map(requestLoad);
  return { index: argminRandomTie(scores, allowed, rng), scores };
}

/** Lexicographic score for prefix policies: fewer missing blocks first, then lower load. Loads are
 * request counts, far below the multiplier. */
export const MISSING_BLOCK_WEIGHT = 1e6;

/** KV-cache utilization in [0, 1] from the last scrape and the replica's capacity; null when either
 * is unknown (no scrape yet, or no capacity in the view). */
export function kvUtilization(c: CandidateView): number | null {
  if (c.scraped === null || c.scraped === undefined || c.kvCapacityTokens === undefined) return null;
  const u = c.scraped.usedTokens / c.kvCapacityTokens;
  return u < 0 ? 0 : u > 1 ? 1 : u;
}

/** Reads one numeric policy option: the default when absent, else a finite number inside the range. */
export function numberOption(
  field: string,
  value: unknown,
  fallback: number,
  range: { min?: number; max?: number; above?: number; integer?: boolean } = {},
): number {
  if (value === undefined) return fallback;
  const n = requireFiniteNumber(field, value);
  if (range.integer === true && !Number.isInteger(n)) throw new RoutingInputError(field, `must be an integer, got ${n}`);
  if (range.min !== undefined && n < range.min) throw new RoutingInputError(field, `must be >= ${range.min}, got ${n}`);
  if (range.above !== undefined && n <= range.above) throw new RoutingInputError(field, `must be > ${range.above}, got ${n}`);
  if (range.max !== undefined && n > range.max) throw new RoutingInputError(field, `must be <= ${range.max}, got ${n}`);
  return n;
}

/** Checks a PolicyEvent before a policy changes its state from it; bad events raise, never half-apply. */
export function checkPolicyEvent(event: PolicyEvent): void {
  if (event === null || typeof event !== "object") throw new RoutingInputError("event", `must be an object, got ${describe(event)}`);
  if (event.kind === "replica-removed") {
    if (typeof event.replicaId !== "string" || event.replicaId.length === 0) {
      throw new RoutingInputError("event.replicaId", `must be a non-empty string, got ${describe(event.replicaId)}`);
    }
    return;
  }
  if (typeof event.requestId !== "string" || event.requestId.length === 0) {
    throw new RoutingInputError("event.requestId", `must be a non-empty string, got ${describe(event.requestId)}`);
  }
  requireFiniteNumber("event.now", event.now);
  if (event.kind === "dispatch") {
    if (typeof event.replicaId !== "string" || event.replicaId.length === 0) {
      throw new RoutingInputError("event.replicaId", `must be a non-empty string, got ${describe(event.replicaId)}`);
    }
    validateRequest(event.request);
    if (event.decision === null || typeof event.decision !== "object" || !Array.isArray(event.decision.scores)) {
      throw new RoutingInputError("event.decision", "must be the Decision select() returned");
    }
  } else if (event.kind !== "first-token" && event.kind !== "complete") {
    throw new RoutingInputError(
      "event.kind",
      `must be "dispatch", "first-token", "complete" or "replica-removed", got ${describe((event as { kind: unknown }).kind)}`,
    );
  }
}

/** Blocks the chosen replica was predicted to hold, as the decision recorded it (0 if absent). */
export function matchedBlocksOf(decision: Decision, replicaId: string): number {
  for (const s of decision.scores) if (s.id === replicaId) return s.matchedBlocks;
  return 0;
}

/** The most routes a peer policy's own PrefixIndex may hold, whatever its project's budget: about
 * 140 MB at 68 B per route, so the policy's memory stays bounded. */
export const PEER_INDEX_MAX_ROUTES = 2 ** 21;

/** Per candidate, the prompt's depth in a policy's own index; all 0 before it has one (the keys are
 * then checked here, as the index would check them). */
export function ownIndexDepths(index: PrefixIndex | null, request: RequestView, candidates: readonly CandidateView[], now: number): number[] {
  const n = candidates.length;
  const depths = new Array<number>(n).fill(0);
  if (index === null) {
    validateBlockKeys("keys", request.keys);
    return depths;
  }
  if (request.keys.length === 0) return depths;
  const ids = new Array<string>(n);
  for (let i = 0; i < n; i++) ids[i] = (candidates[i] as CandidateView).id;
  const { depthByReplica } = index.match(request.keys, now, ids);
  for (let i = 0; i < n; i++) depths[i] = depthByReplica.get(ids[i] as string) ?? 0;
  return depths;
}

/** A peer router's own index after a dispatch: built at the first dispatch of a prompt with keys
 * (only then is the block size known, which `size` may read), then taught every dispatched prompt
 * as the chosen replica's own route, as the peer routers learn their own decisions. Null until a
 * prompt with keys was dispatched. */
export function learnDispatched(
  index: PrefixIndex | null,
  event: Extract<PolicyEvent, { kind: "dispatch" }>,
  size: () => PrefixIndexOptions,
): PrefixIndex | null {
  if (event.request.keys.length === 0) return index;
  const own = index ?? new PrefixIndex(size());
  own.learn(event.request.keys, event.replicaId, "LOCAL", event.now);
  return own;
}

// Input validation shared by policies and availability. Routing never guesses: malformed input
// throws a RoutingInputError naming the field instead of producing an arbitrary pick.

import { RoutingInputError, describe, requireFiniteNumber, requireNonNegative } from "./errors";
import type { CandidateView, RequestView, Weights } from "./types";

export interface WeightBounds {
  rtt: readonly [number, number];
  queue: readonly [number, number];
}

function checkRange(field: string, range: unknown): readonly [number, number] {
  if (!Array.isArray(range) || range.length !== 2) {
    throw new RoutingInputError(field, `must be a [lo, hi] pair, got ${describe(range)}`);
  }
  const lo = requireFiniteNumber(`${field}[0]`, range[0]);
  const hi = requireFiniteNumber(`${field}[1]`, range[1]);
  if (lo <= 0) throw new RoutingInputError(`${field}[0]`, `lower bound must be > 0 (weights evolve in log space), got ${lo}`);
  if (lo > hi) throw new RoutingInputError(field, `bounds are inverted: lo ${lo} > hi ${hi}`);
  return [lo, hi];
}

/** Checks weight bounds: finite, positive, lo ≤ hi. */
export function validateBounds(bounds: WeightBounds): WeightBounds {
  if (bounds === null || typeof bounds !== "object") throw new RoutingInputError("bounds", `must be an object, got ${describe(bounds)}`);
  return { rtt: checkRange("bounds.rtt", bounds.rtt), queue: checkRange("bounds.queue", bounds.queue) };
}

/** Checks cost weights: finite and ≥ 0, and inside `bounds` when given. Returns the weights. */
export function validateWeights(weights: Weights, bounds?: WeightBounds): Weights {
  if (weights === null || typeof weights !== "object") throw new RoutingInputError("weights", `must be an object, got ${describe(weights)}`);
  const rtt = requireNonNegative("weights.rtt", weights.rtt);
  const queue = requireNonNegative("weights.queue", weights.queue);
  if (bounds !== undefined) {
    const b = validateBounds(bounds);
    if (rtt < b.rtt[0] || rtt > b.rtt[1]) throw new RoutingInputError("weights.rtt", `${rtt} is outside its bounds [${b.rtt[0]}, ${b.rtt[1]}]`);
    if (queue < b.queue[0] || queue > b.queue[1]) throw new RoutingInputError("weights.queue", `${queue} is outside its bounds [${b.queue[0]}, ${b.queue[1]}]`);
  }
  return weights;
}

/** Checks the per-request fields policies read. Block keys are checked by the index on match. */
export function validateRequest(request: RequestView): void {
  if (request === null || typeof request !== "object") throw new RoutingInputError("request", `must be an object, got ${describe(request)}`);
  if (!Array.isArray(request.keys)) throw new RoutingInputError("request.keys", `must be an array of block keys, got ${describe(request.keys)}`);
  requireNonNegative("request.inputTokens", request.inputTokens);
  const perBlock = requireFiniteNumber("request.tokensPerBlock", request.tokensPerBlock);
  if (perBlock <= 0) throw new RoutingInputError("request.tokensPerBlock", `must be > 0, got ${perBlock}`);
  if (typeof request.sessionKey !== "string") throw new RoutingInputError("request.sessionKey", `must be a string, got ${describe(request.sessionKey)}`);
}

/** Checks chained block keys: unsigned integers below 2^53 (what every keyer produces). For state
 * that is not a PrefixIndex, which checks the keys it is given itself. */
export function validateBlockKeys(field: string, keys: readonly number[]): void {
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as number;
    if (!(k >= 0 && k <= Number.MAX_SAFE_INTEGER && Math.floor(k) === k)) {
      throw new RoutingInputError(`${field}[${i}]`, `must be an unsigned integer block key < 2^53, got ${describe(k)}`);
    }
  }
}

/** Checks the candidate list: non-empty, unique ids, finite non-negative load and RTT figures. */
export function validateCandidates(candidates: readonly CandidateView[], field = "candidates"): void {
  if (!Array.isArray(candidates)) throw new RoutingInputError(field, `must be an array, got ${describe(candidates)}`);
  if (candidates.length === 0) throw new RoutingInputError(field, "is empty: there is no replica to route to");
  const seen = new Set<string>();
  for (let i = 0; i < candidates.length; i++) {
    const c = candidates[i] as CandidateView;
    const at = `${field}[${i}]`;
    if (c === null || typeof c !== "object") throw new RoutingInputError(at, `must be an object, got ${describe(c)}`);
    if (typeof c.id !== "string" || c.id.length === 0) throw new RoutingInputError(`${at}.id`, `must be a non-empty string, got ${describe(c.id)}`);
    if (seen.has(c.id)) throw new RoutingInputError(`${at}.id`, `duplicate candidate id ${JSON.stringify(c.id)}`);
    seen.add(c.id);
    requireNonNegative(`${at}.rttMs`, c.rttMs);
    requireNonNegative(`${at}.inFlight`, c.inFlight);
    requireNonNegative(`${at}.queuedTokens`, c.queuedTokens);
    requireNonNegative(`${at}.pendingPrefillTokens`, c.pendingPrefillTokens);
    if (c.kvCapacityTokens !== undefined) {
      const capacity = requireFiniteNumber(`${at}.kvCapacityTokens`, c.kvCapacityTokens);
      if (capacity <= 0) throw new RoutingInputError(`${at}.kvCapacityTokens`, `must be > 0 when given, got ${capacity}`);
    }
    if (c.scraped !== null && c.scraped !== undefined) {
      requireNonNegative(`${at}.scraped.running`, c.scraped.running);
      requireNonNegative(`${at}.scraped.waiting`, c.scraped.waiting);
      requireNonNegative(`${at}.scraped.usedTokens`, c.scraped.usedTokens);
    }
  }
}

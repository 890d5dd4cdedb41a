// Quantiles of latency samples: the nearest-rank percentile the tuner optimises, and a
// distribution-free confidence interval for it (the interval the console draws around each arm's p95).

import { normalQuantile } from "./normal";

/** Nearest-rank percentile (no interpolation): the smallest value with at least p of the data at or below it. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((x, y) => x - y);
  return percentileOfSorted(sorted, p);
}

export function percentileOfSorted(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length)));
  return sorted[rank - 1] ?? null;
}

export interface QuantileInterval {
  /** Lower end; null when there are too few samples for any lower order statistic to qualify. */
  lo: number | null;
  /** Upper end; null when the interval is unbounded above (too few samples beyond the quantile). */
  hi: number | null;
}

/**
 * Distribution-free interval for the p-quantile from order statistics: the number of samples below
 * the true quantile is Binomial(n, p), so the order statistics at ranks np ∓ z·√(np(1−p)) bracket
 * it with about the stated confidence whatever the latency distribution. Normal approximation to
 * the binomial, widened by one rank on each side for continuity.
 */
export function quantileInterval(sorted: readonly number[], p: number, confidence: number): QuantileInterval {
  const n = sorted.length;
  if (n === 0) return { lo: null, hi: null };
  const z = normalQuantile(1 - (1 - confidence) / 2);
  const centre = n * p;
  const spread = z * Math.sqrt(n * p * (1 - p));
  const loRank = Math.floor(centre - spread);
  const hiRank = Math.ceil(centre + spread) + 1;
  return {
    lo: loRank >= 1 ? (sorted[loRank - 1] ?? null) : null,
    hi: hiRank <= n ? (sorted[hiRank - 1] ?? null) : null,
  };
}

/**
 * The smallest sample that contains, with probability `confidence`, at least one value above the
 * p-quantile: 1 − p^n ≥ confidence. Below it, the sample's largest value is not even an upper
 * confidence bound for the quantile, so nothing in the sample speaks for its tail (59 for p95 at 95 %).
 */
export function samplesToSeeTail(p: number, confidence: number): number {
  if (!(p > 0 && p < 1) || !(confidence > 0 && confidence < 1))
    throw new Error(`samplesToSeeTail needs p and confidence in (0, 1), got ${p} and ${confidence}`);
  return Math.ceil(Math.log(1 - confidence) / Math.log(p) - 1e-9);
}

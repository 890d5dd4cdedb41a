// Summary statistics for simulator output: nearest-rank percentiles over plain number arrays.
// Nearest-rank (not interpolated) so a reported p95 is always a latency some request actually saw.

/** Nearest-rank percentile of `values` (p in [0, 100]); NaN for an empty list. Does not mutate. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  return percentileOfSorted(sorted, p);
}

export function percentileOfSorted(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const rank = Math.min(n, Math.max(1, Math.ceil((p / 100) * n)));
  return sorted[rank - 1]!;
}

export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
}

export function percentiles(values: readonly number[]): Percentiles {
  const sorted = Float64Array.from(values).sort();
  return {
    p50: percentileOfSorted(sorted, 50),
    p95: percentileOfSorted(sorted, 95),
    p99: percentileOfSorted(sorted, 99),
  };
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** Round to `digits` decimals for output; keeps NaN/Infinity out of JSON by mapping them to null. */
export function roundOrNull(value: number, digits = 3): number | null {
  if (!Number.isFinite(value)) return null;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

// A randomization (re-randomization) test for a concurrent A/B trial.
//
// The trial assigns each session to the candidate arm with probability `share`, independently, by a
// salted hash (trial/arm.ts). Under the sharp null hypothesis — the candidate's weights change no
// request's latency — every outcome would have been the same under any other assignment, so the
// distribution of the test statistic over re-drawn assignments IS its null distribution (Fisher's
// randomization inference). Drawing those assignments from the same design (each session
// Bernoulli(share)) gives a p-value that is exact up to Monte Carlo error, whatever the latency
// distribution, the correlation of turns within a session, or the load drifting during the trial.
// Re-randomizing whole sessions, not requests, is what keeps it exact when a conversation's turns
// are correlated (they share a prompt length and a cache).
//
// The statistic is a difference of ratio means between the arms: Σ sum / Σ count over the incumbent's
// units minus the same over the candidate's. With sum = exceedances of a threshold and count =
// samples it is the difference in exceedance rates (trial/analysis.ts uses the pooled p95, so a
// candidate that exceeds it less often has the lower p95); with sum = Σ log TTFT it is the
// difference in mean log TTFT.

export interface RandomizationUnit {
  /** Arm the unit (a session) was actually assigned to. */
  candidate: boolean;
  /** Σ of the per-sample outcome over the unit's analysed samples. */
  sum: number;
  /** Number of the unit's analysed samples (may be 0: the unit still counts in the design). */
  count: number;
}

export interface RandomizationResult {
  /** Incumbent mean − candidate mean (positive: the candidate's outcome is lower); null when an arm has no analysed sample. */
  statistic: number | null;
  /** P(T* ≥ T): small when the candidate is convincingly lower. 1 when the statistic is undefined. */
  pBetter: number;
  /** P(T* ≤ T): small when the candidate is convincingly higher. 1 when the statistic is undefined. */
  pWorse: number;
  permutations: number;
}

function statisticOf(candidate: ArrayLike<number>, sums: Float64Array, counts: Float64Array): number | null {
  let sumA = 0;
  let countA = 0;
  let sumB = 0;
  let countB = 0;
  for (let i = 0; i < sums.length; i++) {
    if (candidate[i]) {
      sumB += sums[i]!;
      countB += counts[i]!;
    } else {
      sumA += sums[i]!;
      countA += counts[i]!;
    }
  }
  if (countA === 0 || countB === 0) return null;
  return sumA / countA - sumB / countB;
}

/**
 * Monte Carlo randomization test with `permutations` re-draws. The p-values count the observed
 * assignment as one of the draws, (1 + #{T* ≥ T}) / (1 + permutations), which keeps them valid
 * (never below their nominal level under the null) for any number of draws. A re-draw that leaves an
 * arm empty has no statistic; it counts as at least as extreme both ways, which only makes the test
 * more conservative.
 */
export function randomizationTest(units: readonly RandomizationUnit[], share: number, permutations: number, uniform: () => number): RandomizationResult {
  const n = units.length;
  const sums = new Float64Array(n);
  const counts = new Float64Array(n);
  const actual = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const unit = units[i]!;
    sums[i] = unit.sum;
    counts[i] = unit.count;
    actual[i] = unit.candidate ? 1 : 0;
  }
  const observed = statisticOf(actual, sums, counts);
  if (observed === null) return { statistic: null, pBetter: 1, pWorse: 1, permutations: 0 };
  // Ties in a discrete statistic (exceedance counts) are common; a small tolerance keeps an equal
  // re-draw counted as "as extreme", as the definition requires, despite floating-point sums.
  const tolerance = 1e-12 * Math.max(1, Math.abs(observed));
  const drawn = new Uint8Array(n);
  let atLeast = 0;
  let atMost = 0;
  for (let b = 0; b < permutations; b++) {
    for (let i = 0; i < n; i++) drawn[i] = uniform() < share ? 1 : 0;
    const t = statisticOf(drawn, sums, counts);
    if (t === null || t >= observed - tolerance) atLeast++;
    if (t === null || t <= observed + tolerance) atMost++;
  }
  return {
    statistic: observed,
    pBetter: (1 + atLeast) / (1 + permutations),
    pWorse: (1 + atMost) / (1 + permutations),
    permutations,
  };
}

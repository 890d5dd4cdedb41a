// One look at a running A/B trial: per-arm summaries (what the console shows and the guardrails
// judge) and the two randomization tests behind the decision (the tuner README, "Acceptance on
// evidence").
//
// - p95 test: the threshold q is the pooled p95 TTFT of every sample in the trial. A candidate arm
//   that exceeds q less often than the incumbent's arm has the lower p95 (if F_cand(q) > 0.95 >
//   F_inc(q), then p95_cand ≤ q < p95_inc), so the exceedance rate at q is the p95 comparison made
//   testable. Only triggered samples enter the rates: a request whose replica would have been the
//   same under the other arm's weights carries no information about the weights, only noise.
// - CUPED: each exceedance indicator is adjusted by θ·(z − z̄), z = log prompt tokens, θ fitted on
//   the pooled samples without looking at arms. Prompt length is set by the client, not by the
//   weights, so the adjustment removes variance without biasing the comparison, and since it is
//   arm-blind the randomization test stays exact.
// - A robust companion: the same test on mean log TTFT, reported beside the p95 decision.

import { percentileOfSorted, quantileInterval, type QuantileInterval } from "../stats/quantile";
import { randomizationTest, type RandomizationResult, type RandomizationUnit } from "../stats/randomization";
import type { Arm } from "./arm";

/** One valid request routed during a trial, as the tuner sees it. */
export interface TrialSample {
  arm: Arm;
  /** null when no first token arrived (counts as slower than any latency). */
  ttftMs: number | null;
  e2eMs: number;
  replicaId: string | null;
  ok: boolean;
  /** Whether the other arm's weights would have chosen another replica; absent = unknown (analysed). */
  triggered?: boolean;
  /** The randomization unit; absent = the request is its own unit. */
  sessionKey?: string;
  /** Prompt tokens: the CUPED covariate. */
  inputTokens?: number;
}

export interface ArmSummary {
  samples: number;
  triggered: number;
  /** Nearest-rank p95 TTFT; null with no samples or when more than 5 % had no first token. */
  p95TtftMs: number | null;
  p95Interval: QuantileInterval;
  e2eP95Ms: number;
  errorRate: number;
  /**
   * Largest share of the fleet's requests one replica would serve if this arm's routing carried all
   * of the LB's traffic: the arm's per-replica fractions projected onto the LB's trial samples, plus
   * what peer LBs sent to each replica in the same period (observePeer). With one LB it is the arm's
   * own max share.
   */
  maxShare: number;
  /** The replica behind maxShare; null when no request of the LB or its peers was placed. */
  busiestReplica: string | null;
  meanLogTtft: number | null;
}

export interface TrialAnalysis {
  samples: number;
  incumbent: ArmSummary;
  candidate: ArmSummary;
  /** Pooled p95 TTFT that the exceedance test uses; null when it falls on a sample without a first token. */
  thresholdMs: number | null;
  triggeredSamples: number;
  /** Exceedance of the pooled p95 among triggered samples (statistic: incumbent rate − candidate rate). */
  p95: RandomizationResult;
  /** Mean log TTFT among triggered samples with a first token (statistic: incumbent − candidate). */
  logTtft: RandomizationResult;
  /** 1 − var(adjusted)/var(raw) of the CUPED adjustment; null when it was not applied. */
  cupedVarianceReduction: number | null;
}

export interface TrialAnalysisOptions {
  share: number;
  permutations: number;
  /** Coverage of each arm's p95 interval (display and guardrail context). */
  confidence: number;
  cuped: boolean;
  /** Leave out samples marked untriggered (default true). */
  triggeredOnly?: boolean;
  uniform: () => number;
  /** Requests peer LBs sent to each replica during the trial. */
  peerReplicaCounts?: Readonly<Record<string, number>>;
}

/** The quantile the trials compare. */
export const TRIAL_QUANTILE = 0.95;

function summarize(
  samples: readonly TrialSample[],
  lbTotal: number,
  peers: Readonly<Record<string, number>>,
  confidence: number,
): Omit<ArmSummary, "triggered"> & { triggered: number } {
  const ttfts: number[] = [];
  const e2es: number[] = [];
  const perReplica = new Map<string, number>();
  let errors = 0;
  let triggered = 0;
  let logSum = 0;
  let logCount = 0;
  for (const s of samples) {
    ttfts.push(s.ttftMs ?? Infinity);
    e2es.push(s.e2eMs);
    if (!s.ok) errors++;
    if (s.triggered !== false) triggered++;
    if (s.replicaId !== null) perReplica.set(s.replicaId, (perReplica.get(s.replicaId) ?? 0) + 1);
    if (s.ttftMs !== null) {
      logSum += Math.log(Math.max(s.ttftMs, 1));
      logCount++;
    }
  }
  ttfts.sort((a, b) => a - b);
  e2es.sort((a, b) => a - b);
  const n = samples.length;
  const p95 = percentileOfSorted(ttfts, TRIAL_QUANTILE);
  const interval = quantileInterval(ttfts, TRIAL_QUANTILE, confidence);
  let peerTotal = 0;
  for (const count of Object.values(peers)) peerTotal += count;
  let maxShare = 0;
  let busiestReplica: string | null = null;
  const replicas = new Set([...perReplica.keys(), ...Object.keys(peers)]);
  for (const replica of replicas) {
    const own = n === 0 ? 0 : ((perReplica.get(replica) ?? 0) / n) * lbTotal;
    const share = (own + (peers[replica] ?? 0)) / (lbTotal + peerTotal);
    if (share > maxShare) {
      maxShare = share;
      busiestReplica = replica;
    }
  }
  const finite = (v: number | null | undefined) => (v === null || v === undefined || !Number.isFinite(v) ? null : v);
  return {
    samples: n,
    triggered,
    p95TtftMs: finite(p95),
    p95Interval: { lo: finite(interval.lo), hi: finite(interval.hi) },
    e2eP95Ms: percentileOfSorted(e2es, TRIAL_QUANTILE) ?? 0,
    errorRate: n === 0 ? 0 : errors / n,
    maxShare: lbTotal + peerTotal === 0 ? 0 : maxShare,
    busiestReplica,
    meanLogTtft: logCount === 0 ? null : logSum / logCount,
  };
}

/** θ-adjusts `values` on covariate `z` (both indexed alike); returns the adjusted values and the variance reduction. */
function cupedAdjust(values: readonly number[], z: readonly number[]): { adjusted: number[]; reduction: number } | null {
  const n = values.length;
  if (n < 3) return null;
  let meanX = 0;
  let meanZ = 0;
  for (let i = 0; i < n; i++) {
    meanX += values[i]!;
    meanZ += z[i]!;
  }
  meanX /= n;
  meanZ /= n;
  let cov = 0;
  let varZ = 0;
  let varX = 0;
  for (let i = 0; i < n; i++) {
    const dz = z[i]! - meanZ;
    const dx = values[i]! - meanX;
    cov += dx * dz;
    varZ += dz * dz;
    varX += dx * dx;
  }
  if (varZ === 0 || varX === 0) return null;
  const theta = cov / varZ;
  return { adjusted: values.map((x, i) => x - theta * (z[i]! - meanZ)), reduction: (cov * cov) / (varX * varZ) };
}

function unitsOf(samples: readonly TrialSample[], outcome: readonly (number | null)[]): RandomizationUnit[] {
  const byKey = new Map<string, RandomizationUnit>();
  const units: RandomizationUnit[] = [];
  samples.forEach((s, i) => {
    let unit = s.sessionKey === undefined ? undefined : byKey.get(s.sessionKey);
    if (!unit) {
      unit = { candidate: s.arm === "candidate", sum: 0, count: 0 };
      units.push(unit);
      if (s.sessionKey !== undefined) byKey.set(s.sessionKey, unit);
    }
    const value = outcome[i];
    if (value !== null && value !== undefined) {
      unit.sum += value;
      unit.count++;
    }
  });
  return units;
}

export function analyzeTrial(samples: readonly TrialSample[], options: TrialAnalysisOptions): TrialAnalysis {
  const peers = options.peerReplicaCounts ?? {};
  const incumbentSamples = samples.filter((s) => s.arm === "incumbent");
  const candidateSamples = samples.filter((s) => s.arm === "candidate");
  const lbTotal = samples.length;
  const pooled = samples.map((s) => s.ttftMs ?? Infinity).sort((a, b) => a - b);
  const threshold = percentileOfSorted(pooled, TRIAL_QUANTILE) ?? Infinity;

  // Exceedance indicators of the analysed (triggered) samples; null marks a sample left out.
  const analysed = samples.map((s) => options.triggeredOnly === false || s.triggered !== false);
  // A request with no first token exceeds any threshold, including an infinite one (when over 5 % had
  // none). A latency equal to the threshold counts half, the usual tie correction of a quantile test:
  // with coarse or repeated latencies the p95 sample itself would otherwise count for neither side.
  const exceed: (number | null)[] = samples.map((s, i) => {
    if (!analysed[i]) return null;
    if (s.ttftMs === null) return 1;
    return s.ttftMs > threshold ? 1 : s.ttftMs === threshold ? 0.5 : 0;
  });
  let cupedVarianceReduction: number | null = null;
  if (options.cuped && samples.every((s, i) => !analysed[i] || (s.inputTokens !== undefined && s.inputTokens > 0))) {
    const idx = exceed.flatMap((v, i) => (v === null ? [] : [i]));
    const adjusted = cupedAdjust(
      idx.map((i) => exceed[i]!),
      idx.map((i) => Math.log(samples[i]!.inputTokens!)),
    );
    if (adjusted) {
      idx.forEach((i, k) => (exceed[i] = adjusted.adjusted[k]!));
      cupedVarianceReduction = adjusted.reduction;
    }
  }
  const logs: (number | null)[] = samples.map((s, i) => (analysed[i] && s.ttftMs !== null ? Math.log(Math.max(s.ttftMs, 1)) : null));

  return {
    samples: samples.length,
    incumbent: summarize(incumbentSamples, lbTotal, peers, options.confidence),
    candidate: summarize(candidateSamples, lbTotal, peers, options.confidence),
    thresholdMs: Number.isFinite(threshold) ? threshold : null,
    triggeredSamples: analysed.filter(Boolean).length,
    p95: randomizationTest(unitsOf(samples, exceed), options.share, options.permutations, options.uniform),
    logTtft: randomizationTest(unitsOf(samples, logs), options.share, options.permutations, options.uniform),
    cupedVarianceReduction,
  };
}

/**
 * Evidence that the candidate's arm breaks the incumbent arm's absolute guardrail less: the same
 * randomization test (sessions re-drawn) on a per-request indicator of the violation. For "errors" a
 * request that failed; for "share" a request placed on the incumbent arm's busiest replica (its
 * ArmSummary.busiestReplica; peer LBs' requests are common to both arms, so the arms' projected
 * shares of that replica differ exactly as these fractions do). pBetter is small when the candidate's
 * rate is convincingly the lower one. Without it, an incumbent that sits at a cap would lose its place
 * to its own weights whenever its arm happened to read above the cap and the other arm below.
 */
export function violationTest(
  samples: readonly TrialSample[],
  violation: { kind: "errors" } | { kind: "share"; replica: string | null },
  options: Pick<TrialAnalysisOptions, "share" | "permutations" | "uniform">,
): RandomizationResult {
  const indicator =
    violation.kind === "errors" ? (s: TrialSample) => (s.ok ? 0 : 1) : (s: TrialSample) => (s.replicaId !== null && s.replicaId === violation.replica ? 1 : 0);
  return randomizationTest(unitsOf(samples, samples.map(indicator)), options.share, options.permutations, options.uniform);
}

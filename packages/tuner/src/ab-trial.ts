// A/B mode: concurrent trials. While a trial runs, the LB routes the sessions that armOf() puts in
// the candidate arm with the candidate's weights and the rest with the incumbent's, so both arms
// see the same load, the same minute and the same cache. Every `lookEvery` valid samples the trial
// is analysed (trial/analysis.ts) and may end:
//   accept        p ≤ the look's share of α (alpha spending), candidate p95 lower, guardrails passed;
//   reject-worse  the candidate is slower (p ≤ futilityP the other way);
//   reject-futile no improvement at all by half the cap, in the analysed requests or the arms' p95s
//                 (or no request routed differently);
//   accept-equivalent no request routed differently, and the candidate lies nearer the initial
//                 weights than the incumbent: a tie, broken toward what the operator deployed;
//   reject-cap    the cap, undecided: the incumbent stays ("do no harm");
//   guardrails    as in guardrails.ts, judged on the two arms of the same trial;
//   accept-climb-out the incumbent's arm breaks an absolute guardrail and the candidate's arm breaks
//                 it less, with p ≤ the look's α (trial/analysis.ts, violationTest).
// The next trial starts at once with a fresh candidate, salt and id.

import { clipToBounds, sameWeights, type Weights } from "./config";
import { absoluteGuardrail, candidateVerdict, violatesLess, type GuardrailVerdict, type IncumbentStanding, type Measurement } from "./guardrails";
import { nextUniform } from "./prng";
import { adaptSigma, logStep, mutate, negated, sigmaWhileViolating, stepped } from "./search";
import { alphaForLook, alphaSpent } from "./stats/spending";
import { armSamplesToDecide } from "./trial/decidable";
import type { IncumbentRecord, TrialDecision, TrialReport, TrialState, TunerState, TunerStep } from "./state";
import { analyzeTrial, violationTest, type ArmSummary, type TrialAnalysis, type TrialSample } from "./trial/analysis";
import type { TunerSample } from "./window";

function hex32(s: TunerState): string {
  return Math.floor(nextUniform(s.prng) * 4294967296)
    .toString(16)
    .padStart(8, "0");
}

/** Where the tuner started, within today's bounds: what a baseline check challenges with and ties lean toward. */
function startWeights(s: TunerState): Weights {
  return clipToBounds(s.initial, s.config.bounds);
}

/**
 * The next trial's challenger: the initial weights on a baseline check (every trial.baselineEvery
 * trials, while the incumbent differs from them), else the planned step, else a fresh draw. A
 * baseline check leaves a planned step for the trial after it.
 */
function nextChallenger(s: TunerState): { candidate: Weights; baseline: boolean; planned: boolean } {
  const start = startWeights(s);
  const every = s.config.trial.baselineEvery;
  if (every > 0 && s.trialsStarted % every === 0 && !sameWeights(start, s.incumbent.weights)) return { candidate: start, baseline: true, planned: false };
  const step = s.planned;
  s.planned = null;
  if (step !== null) return { candidate: stepped(s.incumbent.weights, step, s.config), baseline: false, planned: true };
  return { candidate: mutate(s.incumbent.weights, s.sigma, s.config, s.prng), baseline: false, planned: false };
}

/** Starts a trial of a fresh candidate against the incumbent and publishes it through `current`. */
export function startTrial(s: TunerState): void {
  s.trialsStarted++;
  // Before the salt: a fresh draw takes its numbers from the PRNG first, as it always has.
  const { candidate, baseline, planned } = nextChallenger(s);
  const salt = hex32(s);
  const trial: TrialState = {
    ...(baseline ? { baseline: true } : {}),
    planned,
    id: `${s.trialsStarted}-${salt}`,
    salt,
    share: s.config.trial.share,
    candidate,
    samples: [],
    peerCounts: {},
    looks: 0,
    alphaSpent: 0,
    latest: null,
    latestAlpha: null,
  };
  s.trial = trial;
  s.current = {
    weights: { ...s.incumbent.weights },
    version: null,
    role: "trial",
    trial: { id: trial.id, salt, share: trial.share, candidate: { ...candidate } },
  };
}

/** A peer LB's request: counted for the fleet-share guardrail of the running trial. */
export function observePeerTrial(s: TunerState, replicaId: string | null): void {
  if (s.trial === null || replicaId === null) return;
  s.trial.peerCounts[replicaId] = (s.trial.peerCounts[replicaId] ?? 0) + 1;
}

/** Adds a sample of the running trial; returns the step when a look decides the trial. */
export function observeTrial(s: TunerState, sample: TunerSample): TunerStep | null {
  const trial = s.trial;
  // Samples routed before the LB applied this trial (or under an older one) say nothing about it.
  if (trial === null || sample.trialId !== trial.id || sample.arm === undefined) return null;
  const kept: TrialSample = { arm: sample.arm, ttftMs: sample.ttftMs, e2eMs: sample.e2eMs, replicaId: sample.replicaId, ok: sample.ok };
  if (sample.triggered !== undefined) kept.triggered = sample.triggered;
  if (sample.sessionKey !== undefined) kept.sessionKey = sample.sessionKey;
  if (sample.inputTokens !== undefined) kept.inputTokens = sample.inputTokens;
  trial.samples.push(kept);
  const n = trial.samples.length;
  const cap = s.config.trial.maxSamples;
  if (n % s.config.trial.lookEvery !== 0 && n < cap) return null;
  return look(s, trial);
}

/**
 * Whether `w` lies closer to the initial weights than the incumbent does (log-space distance). Many
 * weight sets route today's traffic identically (a ratio of W_rtt to W_queue past which every request
 * already stays local, say), and a step of the search may land far out on such a plateau. The far
 * end is where a change of load hurts most: after the regime shift, (56, 0.05) gave a p95 of 1.9 s
 * frozen where (5, 0.05), which routed the same before it, gave 0.7 s (packages/tuner/README.md).
 * So between two weight sets that route alike, the tuner keeps the one nearer where it started.
 */
function closerToInitial(s: TunerState, w: Weights): boolean {
  const start = startWeights(s);
  const distance = (x: Weights) => {
    const step = logStep(start, x);
    return Math.hypot(step.rtt, step.queue);
  };
  return distance(w) < distance(s.incumbent.weights);
}

/** An arm as its guardrails see it. Over 5 % of its requests without a first token (an engine's
 * empty answer is one) leave its p95 undefined (null), which the p95 test already counts against
 * it; that is no error verdict unless the arm had no first token at all (candidateVerdict). Judged
 * as an error, it rejected the candidate alone when both arms had such a p95, and shrank σ. */
function measurement(arm: ArmSummary): Measurement {
  const p95TtftMs = arm.p95TtftMs ?? (arm.meanLogTtft !== null ? Number.POSITIVE_INFINITY : null);
  return { p95TtftMs, e2eP95Ms: arm.e2eP95Ms, maxShare: arm.maxShare, errorRate: arm.errorRate };
}

function fmt(ms: number | null): string {
  return ms === null ? "n/a" : `${Math.round(ms)} ms`;
}

function fmtP(p: number): string {
  return p < 0.001 ? p.toExponential(1) : p.toFixed(3);
}

interface Verdict {
  decision: TrialDecision;
  reason: string;
  guardrail: GuardrailVerdict;
}

function decide(s: TunerState, trial: TrialState, a: TrialAnalysis, alphaAtLook: number): Verdict | null {
  const rails = s.config.guardrails;
  const cap = s.config.trial.maxSamples;
  const n = a.samples;
  const atCap = n >= cap;
  const inc: IncumbentStanding = {
    e2eP95Ms: a.incumbent.e2eP95Ms,
    maxShare: a.incumbent.maxShare,
    errorRate: a.incumbent.errorRate,
    guardrail: absoluteGuardrail(rails, a.incumbent.errorRate, a.incumbent.maxShare),
  };
  const cand = measurement(a.candidate);
  const guardrail = candidateVerdict(rails, cand, inc);
  const p95s = `p95 ${fmt(a.candidate.p95TtftMs)} vs ${fmt(a.incumbent.p95TtftMs)} (candidate vs incumbent, ${a.candidate.samples} + ${a.incumbent.samples} samples)`;
  const enough = armSamplesToDecide(s.config.trial);
  const guardrailsMayDecide = Math.min(a.incumbent.samples, a.candidate.samples) >= enough;
  const p95MayDecide = Math.min(a.incumbent.triggered, a.candidate.triggered) >= enough;

  if (inc.guardrail !== "pass") {
    // Climbing out of a violation: TTFT is not the question (the violation is what makes it fast).
    if (!guardrailsMayDecide) return atCap ? { decision: "reject-cap", reason: `too few samples per arm by the cap; ${p95s}`, guardrail } : null;
    const why = `the incumbent arm breaks the ${inc.guardrail} guardrail (max share ${a.incumbent.maxShare.toFixed(2)}, errors ${(a.incumbent.errorRate * 100).toFixed(1)} %)`;
    if (guardrail !== "pass" && (guardrail === "e2e" || !violatesLess(rails, cand, inc))) {
      return { decision: "reject-guardrail", reason: `${why}; the candidate arm is no better (${guardrail})`, guardrail };
    }
    // A climb-out is an acceptance, so it too needs evidence at this look's α: that the candidate's
    // arm breaks the rule less, not that the two arms read either side of the cap by chance.
    const violation = inc.guardrail === "errors" ? { kind: "errors" as const } : { kind: "share" as const, replica: a.incumbent.busiestReplica };
    const evidence = violationTest(trial.samples, violation, {
      share: trial.share,
      permutations: s.config.trial.permutations,
      uniform: () => nextUniform(s.prng),
    });
    const than = `the candidate arm ${guardrail === "pass" ? "passes" : "violates less"} (max share ${a.candidate.maxShare.toFixed(2)}, errors ${(a.candidate.errorRate * 100).toFixed(1)} %)`;
    if (evidence.pBetter <= alphaAtLook) {
      return { decision: "accept-climb-out", reason: `${why}; ${than}, p = ${fmtP(evidence.pBetter)} ≤ α at this look ${fmtP(alphaAtLook)}`, guardrail };
    }
    if (guardrail !== "pass") {
      return atCap ? { decision: "reject-cap", reason: `${why}; ${than}, but p = ${fmtP(evidence.pBetter)} is above α at the cap`, guardrail } : null;
    }
    // A passing candidate without that evidence is judged as in any other trial, on its TTFT.
  }
  if ((guardrail === "share" || guardrail === "errors") && guardrailsMayDecide) {
    const detail =
      guardrail === "share"
        ? `max fleet share ${a.candidate.maxShare.toFixed(2)} > ${rails.maxShare}`
        : `error rate ${(a.candidate.errorRate * 100).toFixed(1)} % > ${(rails.maxErrorRate * 100).toFixed(1)} %`;
    return { decision: "reject-guardrail", reason: `candidate arm breaks the ${guardrail} guardrail: ${detail}`, guardrail };
  }
  // Weights that route (almost) every request as the incumbent does cannot be told apart from it
  // however long the trial runs: stop, and spend the samples on the next candidate.
  const lookEvery = s.config.trial.lookEvery;
  if ((n >= lookEvery && a.triggeredSamples === 0) || (n >= 2 * lookEvery && a.triggeredSamples < 0.02 * n)) {
    if (!trial.baseline && guardrail === "pass" && closerToInitial(s, trial.candidate)) {
      return {
        decision: "accept-equivalent",
        reason: `equivalent (${a.triggeredSamples} of ${n} requests would have gone elsewhere) and closer to the initial weights: the less extreme of two weight sets that route alike`,
        guardrail,
      };
    }
    return {
      decision: "reject-futile",
      reason: `equivalent: ${a.triggeredSamples} of ${n} requests would have gone elsewhere under the other arm's weights`,
      guardrail,
    };
  }
  // A candidate that cannot reach the analysed samples an acceptance needs by the cap, at the rate
  // its arms have been triggered so far, cannot win: stop, as for an equivalent one.
  const fewestTriggered = Math.min(a.incumbent.triggered, a.candidate.triggered);
  if (n >= 2 * lookEvery && !atCap && fewestTriggered * (cap / n) < enough) {
    return {
      decision: "reject-futile",
      reason: `undecidable by the cap: at this rate an arm would have about ${Math.round(fewestTriggered * (cap / n))} requests that the other arm would have routed elsewhere, fewer than the ${enough} a p95 needs`,
      guardrail,
    };
  }
  const { statistic, pBetter, pWorse } = a.p95;
  const lower = a.candidate.p95TtftMs !== null && a.incumbent.p95TtftMs !== null && a.candidate.p95TtftMs < a.incumbent.p95TtftMs;
  if (pBetter <= alphaAtLook && lower && p95MayDecide) {
    if (guardrail === "pass") return { decision: "accept", reason: `${p95s}; p = ${fmtP(pBetter)} ≤ α at this look ${fmtP(alphaAtLook)}`, guardrail };
    const e2e = `E2E p95 ${fmt(a.candidate.e2eP95Ms)} > ${(1 + rails.e2eTolerance).toFixed(2)} × ${fmt(a.incumbent.e2eP95Ms)}`;
    return { decision: "reject-guardrail", reason: `faster (p = ${fmtP(pBetter)}) but breaks the E2E guardrail: ${e2e}`, guardrail };
  }
  // Slower on the analysed (triggered) requests, and not faster over all of them: the triggered subset
  // is chosen on the state each arm leaves behind (a session's cache sits where its arm put it), so
  // alone it may disagree with the whole arm; a candidate is not called slower against its own p95.
  if (statistic !== null && pWorse <= s.config.trial.futilityP && !lower) {
    return { decision: "reject-worse", reason: `${p95s}; slower with p = ${fmtP(pWorse)}`, guardrail };
  }
  // No gain by half the cap: the analysed requests show none, and neither does the arms' own p95. A
  // candidate whose p95 over all requests is the lower one runs on: as for reject-worse, the triggered
  // subset alone does not overrule it (measured: a step toward the short-prompt optimum stopped here
  // at 792 against 896 ms; packages/tuner/README.md).
  if (n >= cap / 2 && !lower && (statistic === null || statistic <= 0)) {
    const reason =
      statistic === null
        ? `no request in one arm would have gone elsewhere under the other arm's weights (${n} samples)`
        : `no sign of improvement after ${n} of ${cap} samples; ${p95s}`;
    return { decision: "reject-futile", reason, guardrail };
  }
  if (atCap) {
    const why = p95MayDecide
      ? `p = ${fmtP(pBetter)} above α at the cap (${fmtP(alphaAtLook)})`
      : `an arm has fewer than ${enough} requests that the other arm would have routed elsewhere (${a.incumbent.triggered} + ${a.candidate.triggered})`;
    return { decision: "reject-cap", reason: `${p95s}; ${why}`, guardrail };
  }
  return null;
}

function recordOf(weights: Weights, arm: ArmSummary, s: TunerState): IncumbentRecord {
  return {
    weights: { ...weights },
    p95TtftMs: arm.p95TtftMs,
    e2eP95Ms: arm.e2eP95Ms,
    maxShare: arm.maxShare,
    errorRate: arm.errorRate,
    guardrail: absoluteGuardrail(s.config.guardrails, arm.errorRate, arm.maxShare),
  };
}

function look(s: TunerState, trial: TrialState): TunerStep | null {
  const config = s.config.trial;
  const n = trial.samples.length;
  const t = Math.min(1, n / config.maxSamples);
  trial.looks++;
  const alphaAtLook = alphaForLook(config.alpha, trial.alphaSpent, t, config.spendingRho);
  trial.alphaSpent = Math.max(trial.alphaSpent, alphaSpent(config.alpha, t, config.spendingRho));
  const analysis = analyzeTrial(trial.samples, {
    share: trial.share,
    permutations: config.permutations,
    confidence: config.confidence,
    cuped: config.cuped,
    triggeredOnly: config.triggeredOnly,
    uniform: () => nextUniform(s.prng),
    peerReplicaCounts: trial.peerCounts,
  });
  trial.latest = analysis;
  trial.latestAlpha = alphaAtLook;
  const verdict = decide(s, trial, analysis, alphaAtLook);
  if (verdict === null) return null;
  return finish(s, trial, analysis, alphaAtLook, verdict);
}

/** The decisions that make the candidate the incumbent. */
const ACCEPTED: ReadonlySet<TrialDecision> = new Set<TrialDecision>(["accept", "accept-climb-out", "accept-equivalent"]);

/**
 * The log-space step the next candidate takes, or null for a fresh draw. A drawn loser that looked
 * no better is mirrored once; a winner's step is repeated (and repeated again while it keeps
 * winning); a planned candidate that loses is followed by a fresh draw. A tie-break plans nothing.
 * A baseline check keeps the step planned before it, unless the initial weights won: that step was
 * one from the old incumbent.
 */
function nextPlanned(s: TunerState, trial: TrialState, a: TrialAnalysis, decision: TrialDecision, previousIncumbent: Weights): Weights | null {
  if (decision === "accept-equivalent") return null;
  const accepted = ACCEPTED.has(decision);
  if (trial.baseline) return accepted ? null : s.planned;
  const move = logStep(previousIncumbent, trial.candidate);
  if (accepted) return s.config.trial.repeatSuccess ? move : null;
  const lookedWorse = a.p95.statistic === null || a.p95.statistic <= 0;
  return trial.planned !== true && lookedWorse && s.config.trial.mirroredSampling ? negated(move) : null;
}

function finish(s: TunerState, trial: TrialState, a: TrialAnalysis, alphaAtLook: number, verdict: Verdict): TunerStep {
  s.step++;
  const sigmaBefore = s.sigma;
  const previousIncumbent = { ...s.incumbent.weights };
  const accepted = ACCEPTED.has(verdict.decision);
  // Adopting an equivalent is a tie-break, not a win: it says nothing about σ or the next step.
  const tieBreak = verdict.decision === "accept-equivalent";
  // Both arms were measured in the same period, so the incumbent's record is refreshed either way.
  s.incumbent = accepted ? recordOf(trial.candidate, a.candidate, s) : recordOf(s.incumbent.weights, a.incumbent, s);
  // The 1/5 rule counts trials that found something: an acceptance, a guardrail, or a candidate
  // that is slower at the trial's own α. A trial that ends undecided, or stops early on the lenient
  // futility level, found a candidate within the noise of the incumbent: that says the step was not
  // too long, so it must not shrink σ as a real failure does. Counting those as failures collapsed σ
  // to its floor within a dozen trials, long before the optimum (measured on the drifting bowl).
  const failed = verdict.decision === "reject-guardrail" || (verdict.decision === "reject-worse" && a.p95.pWorse <= s.config.trial.alpha);
  // A baseline check is not a step of the search: it says nothing about σ.
  if (!trial.baseline && !tieBreak && (accepted || failed)) s.sigma = adaptSigma(s.outcomes, accepted, s.sigma, s.config);
  const rejectedViolator = !accepted && verdict.guardrail !== "pass" && verdict.guardrail !== "e2e";
  s.sigma = sigmaWhileViolating(s.sigma, sigmaBefore, s.config, s.incumbent.guardrail, rejectedViolator);
  // A/B trials keep running after σ reaches its floor: the tuner tracks a fleet whose load moves.
  s.converged = s.sigma <= s.config.sigmaMin && s.incumbent.guardrail === "pass";
  s.sigma = Math.max(s.sigma, s.config.sigmaMin);

  s.planned = nextPlanned(s, trial, a, verdict.decision, previousIncumbent);

  const report: TrialReport = {
    id: trial.id,
    share: trial.share,
    ...(trial.baseline ? { baseline: true } : {}),
    decision: verdict.decision,
    // The console shows the reason beside the decision: say that this trial was a check, not a step.
    reason: trial.baseline ? `baseline check, the initial weights against the incumbent: ${verdict.reason}` : verdict.reason,
    samples: { incumbent: a.incumbent.samples, candidate: a.candidate.samples },
    triggered: { incumbent: a.incumbent.triggered, candidate: a.candidate.triggered },
    p95TtftMs: { incumbent: a.incumbent.p95TtftMs, candidate: a.candidate.p95TtftMs },
    p95Interval: { incumbent: a.incumbent.p95Interval, candidate: a.candidate.p95Interval },
    meanLogTtft: { incumbent: a.incumbent.meanLogTtft, candidate: a.candidate.meanLogTtft },
    e2eP95Ms: { incumbent: a.incumbent.e2eP95Ms, candidate: a.candidate.e2eP95Ms },
    maxShare: { incumbent: a.incumbent.maxShare, candidate: a.candidate.maxShare },
    errorRate: { incumbent: a.incumbent.errorRate, candidate: a.candidate.errorRate },
    thresholdMs: a.thresholdMs,
    pBetter: a.p95.pBetter,
    pWorse: a.p95.pWorse,
    alphaAtLook,
    logPBetter: a.logTtft.pBetter,
    looks: trial.looks,
    cupedVarianceReduction: a.cupedVarianceReduction,
  };
  const step: TunerStep = {
    step: s.step,
    kind: "trial",
    weights: { ...trial.candidate },
    fitnessP95TtftMs: a.candidate.p95TtftMs ?? a.candidate.e2eP95Ms,
    e2eP95Ms: a.candidate.e2eP95Ms,
    maxShare: a.candidate.maxShare,
    errorRate: a.candidate.errorRate,
    samples: a.samples,
    accepted,
    guardrail: verdict.guardrail,
    sigma: s.sigma,
    incumbent: { ...s.incumbent.weights },
    incumbentP95TtftMs: a.incumbent.p95TtftMs ?? a.incumbent.e2eP95Ms,
    incumbentGuardrail: s.incumbent.guardrail,
    converged: s.converged,
    configVersion: s.current.version,
    trial: report,
  };
  startTrial(s);
  return step;
}

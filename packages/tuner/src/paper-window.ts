// Paper mode (GORGO as published): score the trailing window of all samples every `hop` samples,
// whatever weights routed them, and compare its p95 with the incumbent's stored p95. Kept to
// reproduce the paper; it cannot tell a better candidate from a lighter minute of load, which is why
// A/B trials are the default (ab-trial.ts).

import { absoluteGuardrail, candidateVerdict, violatesLess, type GuardrailVerdict } from "./guardrails";
import { adaptSigma, mutate, sigmaWhileViolating } from "./search";
import type { IncumbentRecord, TunerRole, TunerState, TunerStep } from "./state";
import type { Weights } from "./config";
import { summarizeWindow, type TunerSample, type WindowSummary } from "./window";

export type SetCurrent = (weights: Weights, role: TunerRole) => void;

function measured(s: TunerState, weights: Weights, fitness: number, summary: WindowSummary): IncumbentRecord {
  return {
    weights: { ...weights },
    p95TtftMs: fitness,
    e2eP95Ms: summary.e2eP95Ms,
    maxShare: summary.maxShare,
    errorRate: summary.errorRate,
    guardrail: absoluteGuardrail(s.config.guardrails, summary.errorRate, summary.maxShare),
  };
}

/**
 * Whether a measurable candidate window beats the incumbent. With a healthy incumbent, as published:
 * pass the guardrails and have lower p95 TTFT. With an incumbent that violates an absolute guardrail,
 * TTFT is not the question — its TTFT is typically good *because* of the violation — so the
 * candidate needs only to violate less.
 */
function beatsIncumbent(s: TunerState, summary: WindowSummary, verdict: GuardrailVerdict, fitness: number): boolean {
  const incumbent = s.incumbent;
  if (incumbent.guardrail === "pass" || incumbent.errorRate === null || incumbent.maxShare === null) {
    return verdict === "pass" && (incumbent.p95TtftMs === null || fitness < incumbent.p95TtftMs);
  }
  if (verdict === "pass") return true;
  return violatesLess(s.config.guardrails, { ...summary, p95TtftMs: fitness }, incumbent);
}

function closeWindow(s: TunerState, summary: WindowSummary, setCurrent: SetCurrent): TunerStep {
  s.step++;
  const measuredCurrent = s.current;
  const sigmaBefore = s.sigma;
  // With no TTFT at all, stand in E2E p95 so the step still carries a number; such a window never wins.
  const fitness = summary.p95TtftMs ?? summary.e2eP95Ms;
  let accepted: boolean;
  let guardrail: GuardrailVerdict = "pass";
  let kind: TunerStep["kind"];

  if (measuredCurrent.role === "candidate") {
    kind = "candidate";
    guardrail = candidateVerdict(s.config.guardrails, summary, s.incumbent);
    accepted = summary.p95TtftMs !== null && beatsIncumbent(s, summary, guardrail, fitness);
    if (accepted) s.incumbent = measured(s, measuredCurrent.weights, fitness, summary);
    s.sigma = adaptSigma(s.outcomes, accepted, s.sigma, s.config);
    s.candidatesSinceRemeasure++;
  } else {
    kind = "remeasure";
    accepted = true;
    // The fresh window also re-judges the incumbent against the absolute guardrails, so a hacked start
    // (or an incumbent whose load pattern drifted into violation) is found out here.
    s.incumbent = measured(s, s.incumbent.weights, fitness, summary);
    s.candidatesSinceRemeasure = 0;
  }
  const rejectedViolator = kind === "candidate" && !accepted && guardrail !== "pass" && guardrail !== "e2e";
  s.sigma = sigmaWhileViolating(s.sigma, sigmaBefore, s.config, s.incumbent.guardrail, rejectedViolator);

  if (s.sigma < s.config.sigmaMin && s.incumbent.guardrail === "pass") {
    s.converged = true;
    setCurrent(s.incumbent.weights, "incumbent"); // pin the best weights
  } else if (s.candidatesSinceRemeasure >= s.config.remeasureEvery) {
    setCurrent(s.incumbent.weights, "remeasure");
  } else {
    setCurrent(mutate(s.incumbent.weights, s.sigma, s.config, s.prng), "candidate");
  }

  return {
    step: s.step,
    kind,
    weights: { ...measuredCurrent.weights },
    fitnessP95TtftMs: fitness,
    e2eP95Ms: summary.e2eP95Ms,
    maxShare: summary.maxShare,
    errorRate: summary.errorRate,
    samples: summary.samples,
    accepted,
    guardrail,
    sigma: s.sigma,
    incumbent: { ...s.incumbent.weights },
    incumbentP95TtftMs: s.incumbent.p95TtftMs ?? fitness,
    incumbentGuardrail: s.incumbent.guardrail,
    converged: s.converged,
    configVersion: measuredCurrent.version,
  };
}

/** Adds one sample to the trailing window; returns the step when an evaluation is due. */
export function observePaper(s: TunerState, sample: TunerSample, setCurrent: SetCurrent): TunerStep | null {
  s.window.push(sample);
  if (s.window.length > s.config.window) s.window.shift();
  s.samplesSinceEvaluation++;
  // As published: wait for a full trailing window, then score it every `hop` samples.
  if (s.window.length < s.config.window || s.samplesSinceEvaluation < s.config.hop) return null;
  s.samplesSinceEvaluation = 0;
  return closeWindow(s, summarizeWindow(s.window), setCurrent);
}
